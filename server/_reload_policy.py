"""The reload policy: which config bytes a trigger acts on, and the outcome it leaves.

One :class:`ReloadPolicy` decides for every config authority; what differs
between them is its :class:`ReloadTarget` (read, check, apply, describe):

- one process: the :class:`~server._reloader.Reloader`'s target builds a
  snapshot and swaps it in;
- ``--workers N``: the supervisor's
  :class:`~server.workers.supervisor._authority.ConfigAuthority` validates,
  publishes the data, then the bytes as the next config generation;
- the fleet's producer (``server/fleet/_producer.py``) validates, publishes
  the shared resources, then the bytes as the fleet's config revision.

The rules, written once here:

- A reload reads the bytes and hashes them. Bytes equal to what serves are
  ``unchanged`` (unless ``force``) and are not parsed; anything else is
  parsed once and checked (:meth:`ReloadTarget.check`), then applied, and
  ends ``ok`` or ``error`` with the step that failed. A failure changes
  nothing that serves; it is logged and recorded.
- The watcher and the poll backstop do not retry content that already failed
  (``last`` still reports it); SIGHUP, admin and the supervisor do.
- An ``unchanged`` outcome from the watcher or the poll is quiet (not
  recorded, only shown to the ``listeners``) unless it ends an error, so
  restoring the served content after a bad edit records ``unchanged`` at the
  next event or poll.
- While a candidate is staged (``staged``, ``server/_stage.py``), the watcher
  and the poll leave its bytes alone: a promote or an abort decides them.
- A worker of ``--workers N`` does not decide: it applies the bytes its
  supervisor accepted (:meth:`ReloadPolicy.apply`: no read, no unchanged
  test), with the same lock, outcomes and record.

Guarantees:
- Reloads are serialised by one lock (``_lock``): two triggers never apply
  two configs at once, and ``served`` and ``_failed_hash`` are only changed
  by the reload holding it (:meth:`exclusive` lends it to an authority's own
  steps: the supervisor's pins and rollback, a producer forgetting its config).
- ``last``, ``last_error`` and ``attempts`` change only in :meth:`record`,
  under ``_changed``; :meth:`wait_for` reads them under it.
- Nothing here waits forever: a trigger waits at most ``wait`` seconds for a
  reload in progress and is then answered ``error`` at step ``busy``.
- :meth:`ReloadPolicy.reload` and :meth:`ReloadPolicy.apply` never raise what
  reading, checking or applying a config raises: every failure becomes an
  ``error`` outcome (only :meth:`ReloadPolicy.start` raises: nothing serves yet).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pineapple._error_text import capped
from pineapple.resource.lowlevel import LoadedConfig

from ._build_error import BuildError

__all__ = ["ReloadOutcome", "ReloadPolicy", "ReloadResult", "ReloadTarget", "Trigger"]

_log = logging.getLogger("pineapple.server")

ReloadResult = Literal["ok", "unchanged", "error"]
Trigger = Literal["start", "watch", "poll", "signal", "admin", "supervisor", "promote"]


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
    """What the candidate's warm-up replay found (``server/_replay.py``), when one ran."""

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


class ReloadTarget(Protocol):
    """What one config authority does with a config; the policy decides when."""

    def read(self) -> bytes:
        """The config's bytes; :class:`BuildError` (step ``read``) when they cannot be read."""
        ...

    def check(self, data: bytes) -> LoadedConfig:
        """``data`` parsed (once) and validated, with nothing that serves changed;
        :class:`BuildError` naming the step that refused it."""
        ...

    def apply(self, config: LoadedConfig) -> int | None:
        """Make ``config`` serve; its serial, or None when shutdown began meanwhile
        (nothing serves it). Raises with nothing of ``config`` serving."""
        ...

    def describe(self, serial: int | None) -> str:
        """The end of a log line: with ``serial``, what serves once it was applied; with
        None, what keeps serving after a refused config."""
        ...


class ReloadPolicy:
    """One config authority's reloads over ``target`` (see module docs).

    ``closing``: whether shutdown has begun (a reload then applies nothing).
    ``on_count``: called with each recorded outcome before it is kept (metrics), so
    whoever sees it in ``last`` sees it counted; ``on_record``: after it is kept (a
    manifest, a status that shows ``last``).
    ``records_refusals``: whether a busy or shutting-down answer is recorded
    (one process) or only answered (a supervisor, a producer).
    ``names_kept``: whether an ``error`` outcome names the serial that keeps serving.
    """

    def __init__(
        self,
        target: ReloadTarget,
        *,
        wait: float,
        closing: Callable[[], bool],
        on_count: Callable[[ReloadOutcome], None] = lambda outcome: None,
        on_record: Callable[[ReloadOutcome], None] = lambda outcome: None,
        records_refusals: bool = False,
        names_kept: bool = False,
    ) -> None:
        self.target = target
        self.wait = max(0.0, wait)
        """The longest a trigger waits for a reload in progress."""
        self._closing = closing
        self._on_count = on_count
        self._on_record = on_record
        self._records_refusals = records_refusals
        self._names_kept = names_kept
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._failed_hash: str | None = None
        self.served: tuple[str, int] | None = None
        """The content hash and serial of the config that serves (None: none yet)."""
        self.last: ReloadOutcome | None = None
        """The latest recorded outcome."""
        self.last_error: ReloadOutcome | None = None
        """The latest recorded ``error`` outcome."""
        self.attempts = 0
        """Recorded outcomes."""
        self.staged: str | None = None
        """The content hash of a staged candidate (``server/_stage.py``): the watcher and the
        poll leave those bytes to its promote or abort (set under :meth:`exclusive`)."""
        self.listeners: list[Callable[[ReloadOutcome], None]] = []
        """Called with every outcome, quiet ones too (a fleet pod keeps the config it accepted)."""

    # -- triggers ---------------------------------------------------------------------------

    def start(self, data: bytes | None = None, *, record: bool = True) -> int:
        """Read (unless ``data`` is given), check and apply the first config; its serial.

        Raises :class:`BuildError` when any step fails (nothing serves). ``record``:
        whether the ``start`` outcome is recorded.
        """
        with self._lock:
            started = time.monotonic()
            if data is None:
                data = self.target.read()
            digest = hashlib.sha256(data).hexdigest()
            serial = self.target.apply(self.target.check(data))
            if serial is None:
                raise BuildError("start", "shutdown began while the first config was applied")
            self.served, self._failed_hash = (digest, serial), None
            if record:
                self.record(applied("start", started, digest, serial))
            return serial

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Apply the config if it changed (always with ``force``); never raises a build error.

        The watcher and the poll backstop do not retry content that already
        failed (it is still reported in ``last``); SIGHUP and admin do.
        Waits at most ``wait`` seconds for a reload in progress.
        """
        return self._serialised(trigger, lambda: self._decide(trigger, force, None))

    def apply(self, data: bytes, trigger: Trigger = "supervisor") -> ReloadOutcome:
        """Apply ``data``, decided elsewhere (a worker's supervisor accepted it): no read, no
        unchanged test; the same lock, outcomes and record as :meth:`reload`."""
        return self._serialised(trigger, lambda: self._decide(trigger, True, data))

    @contextlib.contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[bool]:
        """Hold the reload lock (at most ``timeout`` seconds to get it, ``wait`` by default);
        yields whether held."""
        held = self._lock.acquire(timeout=self.wait if timeout is None else timeout)
        try:
            yield held
        finally:
            if held:
                self._lock.release()

    def apply_held(self, data: bytes) -> int | None:
        """Check and apply ``data`` while :meth:`exclusive` is held; its serial (None: shutdown
        began). Raises what checking or applying raises, with nothing of it serving."""
        digest = hashlib.sha256(data).hexdigest()
        serial = self.target.apply(self.target.check(data))
        if serial is not None:
            self.served = (digest, serial)
        return serial

    def refuse_again(self, digest: str) -> None:
        """The watcher and the poll do not apply ``digest`` again (hold :meth:`exclusive`)."""
        self._failed_hash = digest

    def forget(self) -> None:
        """Nothing serves any more (a producer that lost its lease; hold :meth:`exclusive`):
        the next reload applies whatever it reads."""
        self.served = None

    def settle(self) -> bool:
        """Wait (at most ``wait`` seconds) for a reload in progress to end; whether it did."""
        with self.exclusive() as held:
            return held

    def wait_for(self, predicate: Callable[[ReloadOutcome], bool], timeout: float) -> bool:
        """Wait until the latest outcome satisfies ``predicate`` (tests, tooling)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.last is not None and predicate(self.last), timeout
            )

    def record(self, outcome: ReloadOutcome, *, quiet: bool = False) -> ReloadOutcome:
        """Count and keep ``outcome`` as ``last`` unless ``quiet``; show it to the listeners,
        then (unless ``quiet``) to ``on_record``; returns it."""
        if not quiet:
            self._on_count(outcome)
        with self._changed:
            if not quiet:
                self.attempts += 1
                self.last = outcome
                if outcome.result == "error":
                    self.last_error = outcome
            self._changed.notify_all()
        for listener in list(self.listeners):
            try:
                listener(outcome)
            except Exception:
                _log.exception("a reload listener failed")
        if not quiet:
            self._on_record(outcome)
        return outcome

    # -- the decision -----------------------------------------------------------------------

    def _serialised(self, trigger: Trigger, decide: Callable[[], ReloadOutcome]) -> ReloadOutcome:
        asked = time.monotonic()
        if not self._lock.acquire(timeout=self.wait):
            return self._refused(
                ReloadOutcome(
                    "error",
                    trigger,
                    time.time(),
                    time.monotonic() - asked,
                    None,
                    error=f"another reload has been running for over {self.wait:g}s",
                    step="busy",
                )
            )
        try:
            return decide()
        finally:
            self._lock.release()

    def _decide(self, trigger: Trigger, force: bool, data: bytes | None) -> ReloadOutcome:
        if self._closing():
            return self._shutting_down(trigger)
        started = time.monotonic()
        if data is None:
            try:
                data = self.target.read()
            except BuildError as exc:
                return self._failed(trigger, started, None, exc)
        digest = hashlib.sha256(data).hexdigest()
        serving = self.served
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
            return self.record(outcome, quiet=quiet)
        if trigger in ("watch", "poll") and digest == self._failed_hash and self.last is not None:
            return self.last  # reported once already
        if trigger in ("watch", "poll") and digest == self.staged:  # a stage decides them
            outcome = ReloadOutcome("unchanged", trigger, time.time(), 0.0, digest)
            return self.record(outcome, quiet=True)
        try:
            serial = self.target.apply(self.target.check(data))
        except Exception as exc:  # reported once, here; nothing that serves changed
            return self._failed(trigger, started, digest, exc)
        if serial is None:
            return self._shutting_down(trigger)
        self.served, self._failed_hash = (digest, serial), None
        _log.info("config %s reloaded (%s): %s", digest[:12], trigger, self.target.describe(serial))
        # A target that replays its candidates (``server/_replay.py``) says what it found.
        report = getattr(self.target, "replay_report", None)
        return self.record(applied(trigger, started, digest, serial, report))

    def _refused(self, outcome: ReloadOutcome) -> ReloadOutcome:
        """A reload refused before it read anything (busy, shutting down)."""
        return self.record(outcome) if self._records_refusals else outcome

    def _shutting_down(self, trigger: Trigger) -> ReloadOutcome:
        return self._refused(
            ReloadOutcome("error", trigger, time.time(), 0.0, None, error="shutting down")
        )

    def _failed(
        self, trigger: Trigger, started: float, digest: str | None, exc: Exception
    ) -> ReloadOutcome:
        self._failed_hash = digest
        serving = self.served
        outcome = ReloadOutcome(
            "error",
            trigger,
            time.time(),
            time.monotonic() - started,
            digest,
            serial=serving[1] if self._names_kept and serving is not None else None,
            error=str(exc),
            step=exc.step if isinstance(exc, BuildError) else "start",
            report=exc.report if isinstance(exc, BuildError) else None,
        )
        kept = self.target.describe(None)
        _log.error("config reload (%s) %s: %s", trigger, kept, outcome.error)  # bounded
        return self.record(outcome)
