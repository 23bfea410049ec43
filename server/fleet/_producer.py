"""``pineapple publish CONFIG --fleet URL``: the fleet's producer.

The producer is the pod supervisor of ``--workers N`` one level up: it loads
each shared resource of CONFIG once, from its source, on its interval, and
publishes what it accepted into the fleet store, which every pod follows.

- Only the leader publishes (``_leadership.py``): a replica first takes the
  lease; a standby waits and takes over when the leader's lease lapses.
- Its config authority (:class:`ProducerAuthority`, the target of the one
  reload policy, ``server/_reload_policy.py``) parses CONFIG once and
  validates it as ``serve`` does (engine,
  resources, dependencies), then starts a publisher Manager of the entries
  whose type has a fleet codec (``server/workers/_publisher.py``): validators,
  memory budget, ``NOT_MODIFIED`` and carry-over apply as in a pod, and an
  accepted value is announced once (``_publishing.py``); a refused one is not.
  Types without a fleet codec (connection pools, static values) are not
  loaded: each pod builds them. Only then it puts CONFIG's bytes into the
  store's ``CONFIG["current"]`` (when they differ from it): the fleet's config
  revision, published after the announcements it names.
- It follows CONFIG's file (``server/_watcher.py``) and republishes on
  change; a bad config is refused, logged once, and the last good one keeps
  being produced.
- SIGTERM or SIGINT: stop loading, release the lease, exit 0.

Guarantees:
- Nothing is published without the lease: every announcement and config put
  checks :meth:`Leadership.held` first and is a compare-and-set on the
  revision it read (two producers never publish the same generation).
- A lost lease stops the publisher Manager and the watcher; the replica goes
  back to standing by (it never publishes on the old lease again).
- Every wait is bounded: the standby's retry, the leader's wake-ups (at most
  ``retry`` seconds apart), a first load's retries (capped backoff), the
  watcher's stop. A load in flight at SIGTERM or a lost lease is cancelled:
  the serving publisher's by its Manager's stop, a reload's first fetches by
  :meth:`ProducerAuthority.cancel` (``_starting``, written under
  ``_starting_lock`` by the reload and read by the canceller; a cancel sets
  ``closing`` first, and a reload checks it under the lock before it keeps
  its Manager, so it either sees the cancel or is seen by it). The process
  exits after ``STOP_SECONDS`` whatever still runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from pineapple import resource
from pineapple.resource.lowlevel import LoadedConfig, MemoryBudget

from .._build import Builder
from .._config import Config
from .._config_read import read_config_file
from .._reload_policy import ReloadOutcome, ReloadPolicy, Trigger
from .._watcher import ConfigWatcher
from ..workers._publisher import start_publisher
from ._leadership import Leadership, retry_seconds
from ._publishing import Announcer, NotLeaderError, fleet_publishing_registry
from ._store import CONFIG, CONFIG_KEY, FleetStore

__all__ = ["STOP_SECONDS", "Producer", "ProducerAuthority", "producer_id"]

STOP_SECONDS = 30.0
"""After SIGTERM, the longest the producer waits for its loads to stop before it exits."""
_FIRST_LOAD_BACKOFF = (1.0, 30.0)
"""A leader whose first load failed tries again after 1 s, doubling up to 30 s."""

_log = logging.getLogger("pineapple.fleet")


def producer_id() -> str:
    """This replica's name in the lease: host, pid and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProducerAuthority:
    """The producer's config: validated, its shared resources published, then its bytes;
    the target of its reload :attr:`policy` (read, check, apply, describe)."""

    def __init__(
        self, config: Config, store: FleetStore, announcer: Announcer, leading: Leadership
    ) -> None:
        self.config = config
        self.store = store
        self.announcer = announcer
        self.leading = leading
        self.publisher: resource.Manager | None = None
        self.revision = 0
        """The fleet config revision of the config this producer produces."""
        self._budget = MemoryBudget(config.resource_memory_budget_bytes or None)
        self.closing = threading.Event()
        """Set when the producer stops or loses its lease: a reload then applies nothing."""
        self._starting: resource.Manager | None = None
        """The Manager a reload is starting (its first fetches), for :meth:`cancel`."""
        self._starting_lock = threading.Lock()
        self.policy = ReloadPolicy(
            self,
            wait=config.start_timeout,
            closing=lambda: self.closing.is_set() or not self.leading.held(),
            names_kept=True,
        )
        """Decides every reload (``server/_reload_policy.py``)."""

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Apply CONFIG if it changed (see :meth:`ReloadPolicy.reload`)."""
        return self.policy.reload(trigger, force=force)

    def loaded(self) -> bool:
        """Whether a config was accepted (its publisher Manager runs)."""
        return self.publisher is not None

    def cancel(self) -> None:
        """Stop at once a reload's first fetches in flight (SIGTERM, a lost lease): its
        Manager's stop cancels them (a ``feed_data`` loader is killed); nothing of it is
        published (``closing`` is set first)."""
        self.closing.set()
        with self._starting_lock:
            starting = self._starting
        if starting is not None:
            starting.stop()

    def close(self) -> None:
        """Stop the publisher Manager (cancels a load in flight); forget the config."""
        self.cancel()
        # Bounded: a cancelled reload ends at once, any reload within its start timeout.
        with self.policy.exclusive(self.policy.wait * 2):
            publisher, self.publisher = self.publisher, None
            self.policy.forget()
        if publisher is not None:
            publisher.stop()

    @contextlib.contextmanager
    def _start(self, manager: resource.Manager) -> Iterator[None]:
        """Keep ``manager`` for :meth:`cancel` while its first fetches run; refuse to start
        it once the producer stops or lost its lease."""
        with self._starting_lock:
            if self.closing.is_set():
                raise NotLeaderError("the producer is stopping: the config was not loaded")
            self._starting = manager
        try:
            yield
        finally:
            with self._starting_lock:
                self._starting = None

    def _base(self) -> resource.Registry:

        return self.config.resource_types()

    # -- the policy's target ------------------------------------------------------------

    def read(self) -> bytes:
        """CONFIG's bytes."""
        return read_config_file(self.config.path, self.config.max_config_bytes)

    def check(self, data: bytes) -> LoadedConfig:
        """``data`` parsed once, then validated: engine, resources, dependencies (no fetch)."""
        builder = Builder(self.config)
        loaded = builder.load(data)
        builder.check(loaded)
        return loaded

    def apply(self, config: LoadedConfig) -> int | None:
        """Publish the shared resources of ``config`` (checked), then its bytes; the revision."""
        loaded = config
        registry = fleet_publishing_registry(self._base(), self.announcer)
        manager = start_publisher(
            registry,
            loaded,
            metrics=None,
            start_timeout=self.config.start_timeout,
            budget=self._budget,
            carry_over=self.publisher,
            starting=self._start,
            interval_is_max=True,  # a change is read within its resource's interval
        )
        try:
            if self.closing.is_set() or not self.leading.held():
                manager.stop()
                return None
            revision = self._publish_config(config.data)
        except Exception:
            manager.stop()
            raise
        old, self.publisher = self.publisher, manager
        self.revision = revision
        if old is not None:
            old.stop()
        return revision

    def _publish_config(self, data: bytes) -> int:
        """Put ``data`` as the fleet's config unless it is already; its revision."""
        if not self.leading.held():
            raise NotLeaderError("the config was not published: this producer is not leading")
        record = self.store.get(CONFIG, CONFIG_KEY)
        if record is not None and record.value == data:
            return record.revision
        revision = self.store.update(
            CONFIG, CONFIG_KEY, data, revision=record.revision if record is not None else 0
        )
        _log.info("published the fleet config as revision %d (%d bytes)", revision, len(data))
        return revision

    def describe(self, serial: int | None) -> str:
        if serial is not None:
            return f"the fleet's config revision {serial}"
        if not self.revision:
            return "refused, the producer produces nothing yet"
        return f"refused, the producer keeps producing config revision {self.revision}"


class Producer:
    """One producer replica: stand by, lead, publish; stop on :meth:`stop` (SIGTERM)."""

    def __init__(
        self,
        config: Config,
        store: FleetStore,
        workdir: Path,
        *,
        ttl: float,
        holder: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self.leading = Leadership(store, holder or producer_id(), ttl, on_lost=self._lost)
        self.announcer = Announcer(store, workdir, self.leading.held)
        self.authority = ProducerAuthority(config, store, self.announcer, self.leading)

    def _lost(self) -> None:
        """The lease is gone: wake the leader's loop and stop a first load in flight."""
        self._wake.set()
        self.authority.cancel()

    def stop(self) -> None:
        """Ask the producer to stop (from a signal handler or another thread)."""
        self.stopping.set()
        self.authority.closing.set()
        self._wake.set()

    def install_signals(self) -> None:
        """SIGTERM and SIGINT stop the producer (call from the main thread)."""

        def handle(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)

    def run(self) -> int:
        """Stand by and lead until stopped; the exit code (0)."""
        try:
            while not self.stopping.is_set():  # bounded by stopping: one turn per lease held
                if not self.leading.wait_for(self.stopping):
                    break
                self._lead()
        finally:
            self.authority.closing.set()
            self.leading.stop(release=True)
            self.authority.close()
        return 0

    def _lead(self) -> None:
        """Publish while the lease is held; returns when it is lost or the producer stops."""
        self._wake.clear()
        self.authority.closing.clear()
        watcher = ConfigWatcher(
            self.config.path,
            self.authority.reload,
            debounce_seconds=self.config.debounce_seconds,
            poll_seconds=self.config.poll_seconds,
        )
        backoff, next_try = _FIRST_LOAD_BACKOFF[0], 0.0
        watching = False
        try:
            while not self.stopping.is_set() and self.leading.held():
                if not self.authority.loaded() and time.monotonic() >= next_try:
                    outcome = self.authority.reload("start")
                    if not self.authority.loaded():
                        next_try = time.monotonic() + backoff
                        _log.error(
                            "the first load failed (%s); trying again in %gs",
                            outcome.error,
                            backoff,
                        )
                        backoff = min(backoff * 2, _FIRST_LOAD_BACKOFF[1])
                    elif self.config.watch and not watching:
                        watcher.start()
                        watching = True
                # Woken by a lost lease or a stop; else at least every retry seconds.
                self._wake.wait(retry_seconds(self.leading.ttl))
                self._wake.clear()
        finally:
            self.authority.cancel()
            if watching:
                watcher.stop()
            self.authority.close()
        if not self.stopping.is_set():
            self.leading.stop(release=False)
            _log.warning("standing by again after losing the lease")
