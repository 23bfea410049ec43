"""``Follower``: a worker's thread that maps newly published snapshots and watches its parent.

Each worker gets the read end of a pipe whose only write end the supervisor
holds. The follower waits on it at most ``poll_seconds`` at a time; between
waits it looks at the store's manifest (one ``stat``) and, when it changed,
refreshes every shared resource of the serving snapshot's Manager, whose
``MappedFetcher`` opens the new generation (or answers ``NOT_MODIFIED``).
The supervisor writes a notice on the pipe after each manifest write, so a
publish wakes the follower at once; when a notice is lost (a full pipe), a
publish reaches every worker within ``poll_seconds`` plus one open.

The same pass follows the config (:class:`ConfigFollow`): when the manifest
names a config generation newer than the one this worker serves, the
follower reads exactly those bytes from the store and hands them to the
worker's Reloader (``Reloader.apply``: the supervisor decided, the worker
does not decide again).
The supervisor built and validated them first (and a trial worker built
them within ``--build-timeout-seconds``, ``server/workers/supervisor/_trial.py``),
so a failure here is this worker's alone (a busier core, a Lua top level
past its guard): it logs why, keeps serving the generation it has, with its
data still followed, does not try that generation again, and tells the
supervisor (``on_failure``), which takes the pod back to the config before
it (``ConfigAuthority.roll_back``); the worker builds that next generation.
It never stops itself for it: a worker that restarted would build the same
generation at start, and every worker failing alike would restart together.
A build runs on this thread, never on the one that beats (``_liveness``), so
a worker stays alive and serving while it builds, for up to the pass bound.
Pins are the supervisor's alone: a pinned resource gets no new generation,
and a rollback publishes the value it brings back, which the follower maps
like any other.

End-of-file on the pipe means the supervisor is gone (it died, even by
SIGKILL, because the kernel closes its descriptors): the worker then stops
itself with SIGTERM, so no worker keeps serving stale data without a parent.

Guarantees:
- The follower only reads the store and calls ``Manager.refresh``, whose
  ``refresh_lock`` serialises it with the Manager's own refreshes; it borrows
  the serving snapshot for the duration (``SnapshotHolder.acquire``), so a
  config reload cannot close that Manager under it.
- One pass at a time (``_pass``, taken with a timeout of ``pass_timeout``), whether the
  follower's thread or an admin call (``SupervisorLink``'s catch-up) runs it; so
  ``ConfigFollow.served`` and ``ConfigFollow.failed`` have a single writer (set
  at construction to the generation the worker started with, then only by a
  pass); other threads only read them.
- Every wait is bounded (``poll_seconds``); ``stop()`` returns within one wait.
- :meth:`following` (read by the worker's heartbeat, ``_liveness``) is False
  once the thread has ended or a pass has run past ``pass_timeout``: then the
  worker stops beating and the supervisor replaces it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Protocol

from pineapple import PineappleError, resource

from ..._build_error import BuildError
from ..._reload_policy import ReloadOutcome, Trigger
from ..._snapshot import SnapshotHolder
from .._store_format import CONFIG_ENTRY, SnapshotMissingError, codec_of
from ._mapping import MappedStore

__all__ = ["FOLLOW_POLL_SECONDS", "ConfigFollow", "Follower"]

FOLLOW_POLL_SECONDS = 0.2
"""How often a worker looks for a newly published snapshot."""

_log = logging.getLogger("pineapple.server")


def _stop_this_process() -> None:
    """Drain and exit (SIGTERM to this process); the supervisor starts a new worker."""
    os.kill(os.getpid(), signal.SIGTERM)


class Applies(Protocol):
    """What builds a generation in a worker (its ``Reloader``)."""

    def apply(self, data: bytes, trigger: Trigger = "supervisor") -> ReloadOutcome:
        """Build and swap in ``data``; the outcome (never raises a build error)."""
        ...


@dataclass
class ConfigFollow:
    """How a worker follows config generations: ``reloader`` builds the bytes of each
    newer one, read from ``store``.

    :meth:`follow` runs only within a :class:`Follower` pass, so ``served`` and
    ``failed`` have one writer.
    """

    reloader: Applies
    store: MappedStore
    served: int
    """Generation of the config this worker serves (the one it started with, at first)."""
    max_bytes: int
    """The largest config read (``--max-config-bytes``)."""
    failed: int = 0
    """The newest accepted generation this worker could not build (it is not tried again)."""
    on_failure: Callable[[int, str], None] = lambda generation, why: None
    """Told ``(generation, why)`` when this worker cannot build an accepted generation."""

    def follow(self, manifest: dict[str, dict[str, object]]) -> bool:
        """Rebuild from a newer accepted config; False only when shutting down."""
        entry = manifest.get(CONFIG_ENTRY)
        if entry is None:
            return True
        generation = int(str(entry["generation"]))
        if self._done(generation):
            return True
        try:  # the newest accepted generation: this one, or one published since
            generation, data = self.store.read_config(self.max_bytes)
        except BuildError as exc:
            self._cannot_build(generation, str(exc))
            return True
        if self._done(generation):
            return True
        outcome = self.reloader.apply(data, "supervisor")
        if outcome.result == "error":
            if outcome.step is None:  # "shutting down": this worker stops anyway
                return False
            if outcome.step == "busy":  # not tried: the next pass tries it
                return True
            self._cannot_build(generation, str(outcome.error))
            return True
        self.served = generation
        return True

    def _done(self, generation: int) -> bool:
        """Whether ``generation`` serves already, or failed here once."""
        return generation <= self.served or generation == self.failed

    def _cannot_build(self, generation: int, why: str) -> None:
        self.failed = generation
        _log.error(
            "this worker cannot build config generation %d, which the supervisor accepted "
            "(%s); it keeps serving generation %d and builds the next one accepted",
            generation,
            why,
            self.served,
        )
        self.on_failure(generation, why)


class Follower:
    """Maps new generations into ``holder``'s Manager; stops the process when the parent dies.

    With ``config``, each pass first follows the config generations.
    """

    def __init__(
        self,
        store: MappedStore,
        holder: SnapshotHolder,
        parent: Connection,
        poll_seconds: float = FOLLOW_POLL_SECONDS,
        *,
        config: ConfigFollow | None = None,
        pass_timeout: float = 60.0,
        registry: resource.Registry | None = None,
    ) -> None:
        self._registry = registry if registry is not None else resource.lowlevel.default_registry()
        """The worker's resource types: those with a codec are the shared ones."""
        self._store = store
        self._holder = holder
        self._parent = parent
        self._poll = poll_seconds
        self._config = config
        self._pass = threading.Lock()
        self._pass_timeout = pass_timeout
        self._pass_began: float | None = None
        """Monotonic start of the pass in progress (None between passes)."""
        self._stop = threading.Event()
        self._seen: tuple[int, int, int] | None = None
        self._thread = threading.Thread(target=self._run, name="pineapple-follower", daemon=True)

    def start(self) -> None:
        """Start following (the first look happens after one poll)."""
        # _seen stays None: the first pass refreshes once, so a publish between the
        # service's start and this thread is not missed (an unchanged one is NOT_MODIFIED).
        self._thread.start()

    def stop(self) -> None:
        """Stop following; returns within one poll."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._poll * 5 + 1)

    @property
    def generation(self) -> int:
        """The config generation this worker serves (0: it follows no config)."""
        return 0 if self._config is None else self._config.served

    def following(self) -> bool:
        """Whether this worker still follows: the thread runs and no pass outlived its bound."""
        began = self._pass_began
        stuck = began is not None and time.monotonic() - began > self._pass_timeout
        return self._thread.is_alive() and not stuck

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._store.manifest_path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def _run(self) -> None:
        # Bounded: each pass waits at most ``poll`` seconds; ends on stop or parent EOF.
        while not self._stop.is_set():
            try:
                if self._parent.poll(self._poll):
                    self._parent.recv_bytes(64)  # notices are hints; the manifest is the truth
            except (EOFError, OSError):
                self._parent_gone()
                return
            signature = self._signature()
            if signature != self._seen:
                self._seen = signature
                self.follow()

    def follow(self) -> None:
        """One pass: switch to a newer config generation, then map every newer snapshot."""
        if not self._pass.acquire(timeout=self._pass_timeout):
            _log.warning(
                "a follow pass has run for over %gs; skipping this one", self._pass_timeout
            )
            return
        self._pass_began = time.monotonic()
        try:
            try:
                manifest = self._store.manifest()
            except (SnapshotMissingError, ValueError) as exc:
                _log.warning("cannot read %s: %s", self._store.manifest_path, exc)
                return
            if self._config is None or self._config.follow(manifest):
                self._follow_data()
        finally:
            self._pass_began = None
            self._pass.release()

    def _follow_data(self) -> None:
        snap = self._holder.acquire()
        if snap is None:
            return
        try:
            for status in snap.manager.status():
                if codec_of(self._registry, status.type) is not None:
                    try:
                        snap.manager.refresh(status.name)  # maps a newer generation, if any
                    except PineappleError as exc:
                        _log.warning("cannot map the new snapshot of %r: %s", status.name, exc)
        finally:
            snap.release()

    def _parent_gone(self) -> None:
        if self._stop.is_set():
            return
        _log.error("the supervisor is gone; this worker stops (it would serve stale data)")
        _stop_this_process()
