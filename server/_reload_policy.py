"""The reload policy: which config bytes a trigger acts on, and the outcome it leaves.

Two config authorities follow it: the :class:`~server._reloader.Reloader` of
one process (it builds a snapshot and swaps it in) and, under ``--workers N``,
the supervisor's :class:`~server.workers.supervisor._authority.ConfigAuthority` (it validates,
publishes the data, then the bytes as the next config generation). Both
decide a config change the same way, written once here:

- A reload reads the bytes and hashes them. Bytes equal to what serves are
  ``unchanged`` (unless ``force``); anything else is applied, and ends
  ``ok`` or ``error`` with the step that failed. A failure changes nothing
  that serves; it is logged and recorded.
- The watcher and the poll backstop do not retry content that already failed
  (``last`` still reports it); SIGHUP, admin and the supervisor do.
- An ``unchanged`` outcome from the watcher or the poll is quiet (not
  recorded) unless it ends an error, so restoring the served content after a
  bad edit records ``unchanged`` at the next event or poll.

Guarantees:
- Reloads are serialised by one lock (``_reload_lock``): two triggers never
  apply two configs at once, and what ``_serving`` and ``_failed_hash`` say
  is only changed by the reload holding it.
- Nothing here waits forever: a trigger waits at most ``wait`` seconds for a
  reload in progress and is then answered ``error`` at step ``busy``.
- :meth:`reload` never raises what applying a config raises: every failure
  becomes an ``error`` outcome.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from pineapple._error_text import capped

from ._build_error import BuildError

__all__ = ["ReloadOutcome", "ReloadPolicy", "ReloadResult", "Trigger"]

_log = logging.getLogger("pineapple.server")

ReloadResult = Literal["ok", "unchanged", "error"]
Trigger = Literal["start", "watch", "poll", "signal", "admin", "supervisor"]


@dataclass(frozen=True)
class ReloadOutcome:
    """What one reload attempt did. ``error`` is redacted and at most ``MAX_ERROR_BYTES``
    (cut here, whatever made it); ``step`` says where it failed."""

    result: ReloadResult
    trigger: Trigger
    at: float
    duration: float
    content_hash: str | None
    serial: int | None = None
    error: str | None = None
    step: str | None = None
    report: dict[str, Any] | None = None
    """A refused warm-up replay's report (``server/_replay.py``)."""

    def __post_init__(self) -> None:
        if self.error is not None:
            object.__setattr__(self, "error", capped(self.error))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form shown by ``GET /config`` and ``POST /admin/reload``."""
        return {
            "result": self.result,
            "trigger": self.trigger,
            "at": self.at,
            "duration_seconds": round(self.duration, 6),
            "content_hash": self.content_hash,
            "snapshot": self.serial,
            "error": self.error,
            "step": self.step,
            **({"report": self.report} if self.report is not None else {}),
        }


def applied(
    trigger: Trigger,
    started: float,
    content_hash: str,
    serial: int,
    report: dict[str, Any] | None = None,
) -> ReloadOutcome:
    """The ``ok`` outcome of applying ``content_hash`` as ``serial``, timed from ``started``."""
    return ReloadOutcome(
        "ok",
        trigger,
        time.time(),
        time.monotonic() - started,
        content_hash,
        serial=serial,
        report=report,
    )


class ReloadPolicy(ABC):
    """One config authority's reloads (see module docs); subclasses say how to apply a config."""

    def __init__(self, wait: float) -> None:
        self._reload_lock = threading.Lock()
        self._wait = max(0.0, wait)
        self._failed_hash: str | None = None
        self.last: ReloadOutcome | None = None
        """The latest recorded outcome."""
        self.replay_report: dict[str, Any] | None = None
        """What the last applied config's warm-up replay found (``server/_replay.py``),
        set by ``_apply``; shown in its ``ok`` outcome."""

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Apply the config if it changed (always with ``force``); never raises a build error.

        The watcher and the poll backstop do not retry content that already
        failed (it is still reported in ``last``); SIGHUP and admin do.
        Waits at most ``wait`` seconds for a reload in progress.
        """
        asked = time.monotonic()
        if not self._reload_lock.acquire(timeout=self._wait):
            return self._refused(
                ReloadOutcome(
                    "error",
                    trigger,
                    time.time(),
                    time.monotonic() - asked,
                    None,
                    error=f"another reload has been running for over {self._wait:g}s",
                    step="busy",
                )
            )
        try:
            return self._decide(trigger, force)
        finally:
            self._reload_lock.release()

    def _decide(self, trigger: Trigger, force: bool) -> ReloadOutcome:
        if self._closing():
            return self._shutting_down(trigger)
        started = time.monotonic()
        try:
            data = self._read()
        except BuildError as exc:
            return self._failed(trigger, started, None, exc)
        digest = hashlib.sha256(data).hexdigest()
        serving = self._serving()
        if not force and serving is not None and serving[0] == digest:
            self._failed_hash = None
            # A quiet no-op, unless it ends an error: then ``last`` must say so.
            recovered = self.last is not None and self.last.result == "error"
            quiet = trigger in ("watch", "poll") and not recovered
            if not quiet:
                _log.info("config %s unchanged (%s): nothing to reload", digest[:12], trigger)
            outcome = ReloadOutcome(
                "unchanged", trigger, time.time(), 0.0, digest, serial=serving[1]
            )
            return self._record(outcome, quiet=quiet)
        if trigger in ("watch", "poll") and digest == self._failed_hash and self.last is not None:
            return self.last  # reported once already
        try:
            serial = self._apply(data, digest)
        except Exception as exc:  # reported once, here; nothing that serves changed
            return self._failed(trigger, started, digest, exc)
        if serial is None:
            return self._shutting_down(trigger)
        self._failed_hash = None
        _log.info("config %s reloaded (%s): %s", digest[:12], trigger, self._serves(serial))
        return self._record(applied(trigger, started, digest, serial, self.replay_report))

    def _shutting_down(self, trigger: Trigger) -> ReloadOutcome:
        return self._refused(
            ReloadOutcome("error", trigger, time.time(), 0.0, None, error="shutting down")
        )

    def _failed(
        self, trigger: Trigger, started: float, digest: str | None, exc: Exception
    ) -> ReloadOutcome:
        self._failed_hash = digest
        kept, serial = self._kept()
        outcome = ReloadOutcome(
            "error",
            trigger,
            time.time(),
            time.monotonic() - started,
            digest,
            serial=serial,
            error=str(exc),
            step=exc.step if isinstance(exc, BuildError) else "start",
            report=exc.report if isinstance(exc, BuildError) else None,
        )
        _log.error("config reload (%s) %s: %s", trigger, kept, outcome.error)  # bounded
        return self._record(outcome)

    # -- what each authority says ---------------------------------------------------------

    @abstractmethod
    def _read(self) -> bytes:
        """The config's bytes; :class:`BuildError` (step ``read``) when they cannot be read."""

    @abstractmethod
    def _closing(self) -> bool:
        """Whether shutdown has begun (a reload then applies nothing)."""

    @abstractmethod
    def _serving(self) -> tuple[str, int] | None:
        """The content hash and serial of the config that serves, if one does."""

    @abstractmethod
    def _apply(self, data: bytes, digest: str) -> int | None:
        """Make ``data`` serve; its serial, or None when shutdown began meanwhile (nothing
        serves it). Raises with nothing of ``data`` serving."""

    @abstractmethod
    def _serves(self, serial: int) -> str:
        """The end of the log line of a reload that made ``serial`` serve."""

    @abstractmethod
    def _kept(self) -> tuple[str, int | None]:
        """After a failure: the log line's words for what keeps serving, and the serial the
        error outcome names."""

    @abstractmethod
    def _record(self, outcome: ReloadOutcome, *, quiet: bool = False) -> ReloadOutcome:
        """Keep ``outcome`` as ``last`` unless ``quiet``; returns it."""

    @abstractmethod
    def _refused(self, outcome: ReloadOutcome) -> ReloadOutcome:
        """What becomes of a reload refused before it read anything (busy, shutting down)."""
