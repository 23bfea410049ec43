"""The reloader: turns "the config may have changed" into a new snapshot, or into nothing.

Every trigger (the watcher, the poll backstop, SIGHUP, ``POST /admin/reload``)
calls :meth:`Reloader.reload`. A reload reads the file, skips it when the
content hash equals the serving snapshot's, builds a new snapshot carrying
over unchanged resource entries from the serving Manager, and swaps it in.

Guarantees:
- Reloads are serialised by one lock, so two triggers never build two
  snapshots at once and carry-over always reads the snapshot that is serving
  (only a reload, holding that lock, replaces it).
- A failed reload changes nothing that serves: the new engine and manager
  are torn down by the builder, the holder still points at the old snapshot.
  The failure is logged, counted, and kept (redacted) in ``last``.
- After :meth:`close` no reload publishes anything, so shutdown cannot race
  a reload into publishing a snapshot nobody will retire: ``_closed`` is set
  and tested under ``_publish`` (held only for the flag test and the swap,
  never while building), and a reload that finds it set retires its own
  snapshot instead of swapping it in.
- Nothing here waits forever. Reading the file cannot block (see
  ``read_config_file``); a trigger waits at most ``start_timeout`` seconds
  for a reload in progress (the longest a build's fetches may take) and is
  then answered ``error`` at step ``busy``; :meth:`close` waits at most as
  long for it and then returns, the reload finishing on its own thread.
- ``last`` tells the truth: an ``unchanged`` outcome from the watcher or the
  poll is quiet (not counted, not recorded) unless ``last`` is an error, so
  restoring the served content after a bad edit records ``unchanged`` (with
  its time) at the next event or poll.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._build import Builder, BuildError, read_config_file
from ._config import Config
from ._metrics import ServerMetrics
from ._snapshot import Snapshot, SnapshotHolder

__all__ = ["ReloadOutcome", "ReloadResult", "Reloader", "Trigger"]

_log = logging.getLogger("pineapple.server")

ReloadResult = Literal["ok", "unchanged", "error"]
Trigger = Literal["start", "watch", "poll", "signal", "admin", "supervisor"]


@dataclass(frozen=True)
class ReloadOutcome:
    """What one reload attempt did. ``error`` is redacted; ``step`` says where it failed."""

    result: ReloadResult
    trigger: Trigger
    at: float
    duration: float
    content_hash: str | None
    serial: int | None = None
    error: str | None = None
    step: str | None = None

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
        }


class Reloader:
    """Loads the first snapshot and every later one (see module docs)."""

    def __init__(
        self, config: Config, holder: SnapshotHolder, builder: Builder, metrics: ServerMetrics
    ) -> None:
        self._config = config
        self._holder = holder
        self._builder = builder
        self._metrics = metrics
        self._lock = threading.Lock()
        self._publish = threading.Lock()
        self._wait = max(0.0, config.start_timeout)
        self._changed = threading.Condition()
        self._closed = False
        self._failed_hash: str | None = None
        self.attempts = 0
        self.last: ReloadOutcome | None = None
        self.last_error: ReloadOutcome | None = None
        self.listeners: list[Callable[[ReloadOutcome], None]] = []

    def load_initial(self) -> Snapshot:
        """Build and publish the first snapshot; :class:`BuildError` if any step fails."""
        with self._lock:
            started = time.monotonic()
            data = self._read()
            snap = self._builder.build(data)
            self._metrics.track_engine(snap.engine)
            self._holder.swap(snap)
            self._record(
                ReloadOutcome(
                    "ok",
                    "start",
                    time.time(),
                    time.monotonic() - started,
                    snap.info.content_hash,
                    serial=snap.serial,
                ),
                count=False,
            )
            return snap

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Reload if the file changed (always with ``force``); never raises a build error.

        The watcher and the poll backstop do not retry content that already
        failed (it is still reported in ``last``); SIGHUP and admin do.
        Waits at most ``start_timeout`` seconds for a reload in progress.
        """
        if not self._lock.acquire(timeout=self._wait):
            return self._record(
                ReloadOutcome(
                    "error",
                    trigger,
                    time.time(),
                    self._wait,
                    None,
                    error=f"another reload has been running for over {self._wait:g}s",
                    step="busy",
                )
            )
        try:
            return self._reload(trigger, force)
        finally:
            self._lock.release()

    def _reload(self, trigger: Trigger, force: bool) -> ReloadOutcome:
        if self._closed:
            return self._shutting_down(trigger)
        started = time.monotonic()
        try:
            data = self._read()
        except BuildError as exc:
            return self._failed(trigger, started, None, exc)
        digest = hashlib.sha256(data).hexdigest()
        current = self._holder.current
        if not force and current is not None and current.info.content_hash == digest:
            self._failed_hash = None
            # A quiet no-op, unless it ends an error: then /config must say so.
            recovered = self.last is not None and self.last.result == "error"
            quiet = trigger in ("watch", "poll") and not recovered
            if not quiet:
                _log.info("config %s unchanged (%s): nothing to reload", digest[:12], trigger)
            return self._record(
                ReloadOutcome(
                    "unchanged", trigger, time.time(), 0.0, digest, serial=current.serial
                ),
                quiet=quiet,
            )
        if trigger in ("watch", "poll") and digest == self._failed_hash:
            assert self.last is not None
            return self.last
        carry = current.manager if current is not None else None
        try:
            snap = self._builder.build(data, carry_over=carry)
        except BuildError as exc:
            return self._failed(trigger, started, digest, exc)
        if not self._publish_unless_closed(snap):
            snap.retire()  # built while shutting down: nobody else would retire it
            return self._shutting_down(trigger)
        self._failed_hash = None
        _log.info(
            "config %s reloaded (%s): snapshot %d serving",
            digest[:12],
            trigger,
            snap.serial,
        )
        return self._record(
            ReloadOutcome(
                "ok",
                trigger,
                time.time(),
                time.monotonic() - started,
                digest,
                serial=snap.serial,
            )
        )

    def _read(self) -> bytes:
        """The config's bytes: from ``config_source`` when set, else from the file."""
        source = self._config.config_source
        if source is not None:
            return source.read(self._config.max_config_bytes)
        return read_config_file(self._config.path, self._config.max_config_bytes)

    def _publish_unless_closed(self, snap: Snapshot) -> bool:
        """Swap ``snap`` in unless :meth:`close` has run; whether it was."""
        with self._publish:
            if self._closed:
                return False
            self._metrics.track_engine(snap.engine)
            self._holder.swap(snap)
            return True

    def close(self) -> None:
        """Refuse every later reload; waits (at most ``start_timeout`` s) for one in progress."""
        with self._publish:
            self._closed = True
        if self._lock.acquire(timeout=self._wait):
            self._lock.release()
        else:
            _log.warning("a config reload still runs after %gs; not waiting longer", self._wait)

    def wait_for(self, predicate: Callable[[ReloadOutcome], bool], timeout: float) -> bool:
        """Wait until the latest outcome satisfies ``predicate`` (tests, tooling)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.last is not None and predicate(self.last), timeout
            )

    # -- recording ------------------------------------------------------------------------

    def _shutting_down(self, trigger: Trigger) -> ReloadOutcome:
        return self._record(
            ReloadOutcome("error", trigger, time.time(), 0.0, None, error="shutting down")
        )

    def _failed(
        self, trigger: Trigger, started: float, digest: str | None, exc: BuildError
    ) -> ReloadOutcome:
        self._failed_hash = digest
        outcome = ReloadOutcome(
            "error",
            trigger,
            time.time(),
            time.monotonic() - started,
            digest,
            error=str(exc),
            step=exc.step,
        )
        _log.error("config reload (%s) failed, the previous config keeps serving: %s", trigger, exc)
        return self._record(outcome)

    def _record(
        self, outcome: ReloadOutcome, *, count: bool = True, quiet: bool = False
    ) -> ReloadOutcome:
        if count and not quiet:
            self._metrics.observe_reload(outcome.result, outcome.duration)
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
        return outcome
