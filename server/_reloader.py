"""The reloader: one process's reloads, the policy over a snapshot target.

Every trigger (the watcher, the poll backstop, SIGHUP, ``POST /admin/reload``)
calls :meth:`Reloader.reload`, which decides as ``server/_reload_policy.py``
says; its target (:class:`SnapshotTarget`) reads the file, parses it once,
builds a new snapshot carrying over unchanged resource entries from the
serving Manager, and swaps it in. A worker of ``--workers N`` is one process
too: its follower hands :meth:`Reloader.apply` the bytes the supervisor
accepted, decided there.

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
from collections.abc import Callable
from typing import Any

from pineapple.resource.lowlevel import LoadedConfig

from ._build import Builder
from ._build_error import BuildError
from ._config import Config, ConfigSource
from ._reload_policy import ReloadOutcome, ReloadPolicy, Trigger
from ._snapshot import Snapshot, SnapshotHolder
from .metrics._metrics import ServerMetrics

__all__ = ["Reloader", "SnapshotTarget"]

_log = logging.getLogger("pineapple.server")


class SnapshotTarget:
    """One process's :class:`~server._reload_policy.ReloadTarget`: build a snapshot, swap it in."""

    def __init__(
        self, config: Config, holder: SnapshotHolder, builder: Builder, metrics: ServerMetrics
    ) -> None:
        self._config = config
        self._holder = holder
        self._builder = builder
        self._metrics = metrics
        self._publish = threading.Lock()
        self.closed = False
        """Set by :meth:`cancel`: nothing is swapped in after it."""
        self.replay: Callable[[Snapshot, bytes], dict[str, Any] | None] | None = None
        """Asked before a reload swaps its snapshot in (``server/_replay.py``); raises to refuse."""
        self.replay_report: dict[str, Any] | None = None
        """What :attr:`replay` found for the snapshot swapped in last."""

    def read(self) -> bytes:
        """The config's bytes: from ``config_source`` when set, else from the file."""
        return self._config.wiring.read_config(self._config.path, self._config.max_config_bytes)

    def check(self, data: bytes) -> LoadedConfig:
        """``data`` parsed once: the build is the check (it fails before anything swaps)."""
        return self._builder.load(data)

    def apply(self, config: LoadedConfig) -> int | None:
        snap = self.prepare(config)
        return None if snap is None else self.publish(snap)

    def prepare(self, config: LoadedConfig) -> Snapshot | None:
        """Build ``config``'s snapshot (carrying over the serving Manager's unchanged entries)
        and replay the sample on it, without swapping it in (a stage keeps it as a shadow,
        ``server/_stage.py``); None when shutdown cancelled the build. Raises with nothing
        of it left running."""
        current = self._holder.current
        try:
            snap = self._builder.build(
                config, carry_over=None if current is None else current.manager
            )
        except BuildError:
            if self.closed:
                return None  # cancelled by shutdown: "shutting down", not a bad config
            raise
        try:
            self.replay_report = None  # the candidate answers recent requests first
            if self.replay is not None and current is not None:
                self.replay_report = self.replay(snap, config.data)
        except BaseException:
            snap.retire()
            raise
        return snap

    def publish(self, snap: Snapshot) -> int | None:
        """Swap ``snap`` in; its serial, or None (and ``snap`` retired) after :meth:`cancel`."""
        if not self._publish_unless_closed(snap):
            snap.retire()  # built while shutting down: nobody else would retire it
            return None
        return snap.serial

    def describe(self, serial: int | None) -> str:
        if serial is None:
            return "failed, the previous config keeps serving"
        return f"snapshot {serial} serving"

    def cancel(self) -> None:
        """Swap nothing in any more and cancel the build in progress (any thread; no wait)."""
        with self._publish:
            self.closed = True
        self._builder.cancel()

    def _publish_unless_closed(self, snap: Snapshot) -> bool:
        """Swap ``snap`` in unless :meth:`cancel` has run; whether it was."""
        with self._publish:
            if self.closed:
                return False
            self._metrics.track_engine(snap.engine)
            self._holder.swap(snap)
            return True


class Reloader:
    """Loads the first snapshot and every later one (see module docs)."""

    def __init__(
        self, config: Config, holder: SnapshotHolder, builder: Builder, metrics: ServerMetrics
    ) -> None:
        self._holder = holder
        self._metrics = metrics
        self._config_source = config.wiring.config_source
        self.target = SnapshotTarget(config, holder, builder, metrics)
        self.policy = ReloadPolicy(
            self.target,
            wait=config.start_timeout,
            closing=lambda: self.target.closed,
            on_count=self._observe,
            records_refusals=True,
        )

    # -- what the policy keeps --------------------------------------------------------------

    @property
    def last(self) -> ReloadOutcome | None:
        """The latest recorded outcome."""
        return self.policy.last

    @property
    def last_error(self) -> ReloadOutcome | None:
        """The latest recorded ``error`` outcome."""
        return self.policy.last_error

    @property
    def attempts(self) -> int:
        """Recorded outcomes (the start's included)."""
        return self.policy.attempts

    @property
    def config_source(self) -> ConfigSource | None:
        """Where the config's bytes come from when not from the file (None: the file)."""
        return self._config_source

    @property
    def listeners(self) -> list[Callable[[ReloadOutcome], None]]:
        """Called with every outcome, quiet ones too."""
        return self.policy.listeners

    # -- triggers ---------------------------------------------------------------------------

    def load_initial(self, data: bytes | None = None) -> Snapshot:
        """Build and publish the first snapshot (of ``data`` when given, else of what
        :meth:`SnapshotTarget.read` reads); :class:`BuildError` if any step fails."""
        self.policy.start(data)
        snap = self._holder.current
        assert snap is not None  # swapped in by the start, under the policy's lock
        return snap

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Apply the config if it changed (see :meth:`ReloadPolicy.reload`)."""
        return self.policy.reload(trigger, force=force)

    def apply(self, data: bytes, trigger: Trigger = "supervisor") -> ReloadOutcome:
        """Build and swap in ``data``, decided elsewhere (see :meth:`ReloadPolicy.apply`)."""
        return self.policy.apply(data, trigger)

    def cancel(self) -> None:
        """Refuse every later reload and cancel the build in progress (any thread; no wait)."""
        self.target.cancel()

    def close(self) -> None:
        """Refuse every later reload; cancels one in progress and waits (at most
        ``start_timeout`` s) for its thread to let go."""
        self.cancel()
        if not self.policy.settle():
            _log.warning(
                "a config reload still runs after %gs; not waiting longer", self.policy.wait
            )

    def wait_for(self, predicate: Callable[[ReloadOutcome], bool], timeout: float) -> bool:
        """Wait until the latest outcome satisfies ``predicate`` (tests, tooling)."""
        return self.policy.wait_for(predicate, timeout)

    def _observe(self, outcome: ReloadOutcome) -> None:
        if outcome.trigger != "start":  # the first load is not a reload
            self._metrics.observe_reload(outcome.result, outcome.duration)
