"""The reloader: turns "the config may have changed" into a new snapshot, or into nothing.

Every trigger (the watcher, the poll backstop, SIGHUP, ``POST /admin/reload``)
calls :meth:`Reloader.reload`, which decides as ``server/_reload_policy.py``
says: a reload reads the file, skips it when the content hash equals the
serving snapshot's, builds a new snapshot carrying over unchanged resource
entries from the serving Manager, and swaps it in.

Guarantees:
- Reloads are serialised by the policy's lock, so two triggers never build
  two snapshots at once and carry-over always reads the snapshot that is
  serving (only a reload, holding that lock, replaces it).
- A failed reload changes nothing that serves: the new engine and manager
  are torn down by the builder, the holder still points at the old snapshot.
  The failure is logged, counted, and kept (redacted) in ``last``.
- After :meth:`close` no reload publishes anything, so shutdown cannot race
  a reload into publishing a snapshot nobody will retire: ``_closed`` is set
  and tested under ``_publish`` (held only for the flag test and the swap,
  never while building), and a reload that finds it set retires its own
  snapshot instead of swapping it in.
- :meth:`cancel` (SIGTERM) is :meth:`close` without the wait: no reload
  publishes anything after it, and the build in progress is cancelled
  (``Builder.cancel``: its fetches in flight cancelled, a query killed), so
  shutdown never waits for a slow fetch nor builds a snapshot nobody serves.
- Nothing here waits forever. Reading the file cannot block (see
  ``read_config_file``); a trigger waits at most ``start_timeout`` seconds
  for a reload in progress (the longest a build's fetches may take) and is
  then answered ``error`` at step ``busy``; :meth:`close` waits at most as
  long for it and then returns, the reload finishing on its own thread.
- ``last`` tells the truth: an ``unchanged`` outcome from the watcher or the
  poll is quiet (not counted, not recorded, only shown to the listeners)
  unless ``last`` is an error, so restoring the served content after a bad
  edit records ``unchanged`` (with its time) at the next event or poll. Busy
  and shutting-down refusals are recorded like any other error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ._build import Builder
from ._build_error import BuildError
from ._config import Config, ConfigSource
from ._reload_policy import ReloadOutcome, ReloadPolicy, applied
from ._snapshot import Snapshot, SnapshotHolder
from .metrics._metrics import ServerMetrics

__all__ = ["Reloader"]

_log = logging.getLogger("pineapple.server")


class Reloader(ReloadPolicy):
    """Loads the first snapshot and every later one (see module docs)."""

    def __init__(
        self, config: Config, holder: SnapshotHolder, builder: Builder, metrics: ServerMetrics
    ) -> None:
        super().__init__(config.start_timeout)
        self._config = config
        self._holder = holder
        self._builder = builder
        self._metrics = metrics
        self._publish = threading.Lock()
        self._changed = threading.Condition()
        self._closed = False
        self.attempts = 0
        self.last_error: ReloadOutcome | None = None
        self.listeners: list[Callable[[ReloadOutcome], None]] = []
        self.replay: Callable[[Snapshot, bytes], dict[str, Any] | None] | None = None
        """Asked before a reload swaps its snapshot in (``server/_replay.py``); raises to refuse."""

    def load_initial(self) -> Snapshot:
        """Build and publish the first snapshot; :class:`BuildError` if any step fails."""
        with self._reload_lock:
            started = time.monotonic()
            data = self._read()
            snap = self._builder.build(data)
            self._metrics.track_engine(snap.engine)
            self._holder.swap(snap)
            self._record(
                applied("start", started, snap.info.content_hash, snap.serial), count=False
            )
            return snap

    def cancel(self) -> None:
        """Refuse every later reload and cancel the build in progress (any thread; no wait)."""
        with self._publish:
            self._closed = True
        self._builder.cancel()

    def close(self) -> None:
        """Refuse every later reload; cancels one in progress and waits (at most
        ``start_timeout`` s) for its thread to let go."""
        self.cancel()
        if self._reload_lock.acquire(timeout=self._wait):
            self._reload_lock.release()
        else:
            _log.warning("a config reload still runs after %gs; not waiting longer", self._wait)

    def wait_for(self, predicate: Callable[[ReloadOutcome], bool], timeout: float) -> bool:
        """Wait until the latest outcome satisfies ``predicate`` (tests, tooling)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.last is not None and predicate(self.last), timeout
            )

    @property
    def config_source(self) -> ConfigSource | None:
        """Where the config's bytes come from when not from the file (None: the file)."""
        return self._config.wiring.config_source

    # -- the policy's steps -----------------------------------------------------------------

    def _read(self) -> bytes:
        """The config's bytes: from ``config_source`` when set, else from the file."""
        return self._config.wiring.read_config(self._config.path, self._config.max_config_bytes)

    def _closing(self) -> bool:
        return self._closed

    def _serving(self) -> tuple[str, int] | None:
        current = self._holder.current
        return None if current is None else (current.info.content_hash, current.serial)

    def _apply(self, data: bytes, digest: str) -> int | None:
        current = self._holder.current
        try:
            snap = self._builder.build(
                data, carry_over=None if current is None else current.manager
            )
        except BuildError:
            if self._closed:
                return None  # cancelled by shutdown: "shutting down", not a bad config
            raise
        try:
            self.replay_report = None  # the candidate answers recent requests first
            if self.replay is not None and current is not None:
                self.replay_report = self.replay(snap, data)
        except BaseException:
            snap.retire()
            raise
        if not self._publish_unless_closed(snap):
            snap.retire()  # built while shutting down: nobody else would retire it
            return None
        return snap.serial

    def _publish_unless_closed(self, snap: Snapshot) -> bool:
        """Swap ``snap`` in unless :meth:`close` has run; whether it was."""
        with self._publish:
            if self._closed:
                return False
            self._metrics.track_engine(snap.engine)
            self._holder.swap(snap)
            return True

    def _serves(self, serial: int) -> str:
        return f"snapshot {serial} serving"

    def _kept(self) -> tuple[str, int | None]:
        return "failed, the previous config keeps serving", None

    def _refused(self, outcome: ReloadOutcome) -> ReloadOutcome:
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
