"""``pineapple serve --workers N``: one supervisor that loads, N workers that serve.

::

    supervisor ── reads + validates the config once; fetches every data resource
    │             (feed_data, json_file, csv_file) and publishes it into a SharedStore
    │             (/dev/shm/pineapple-XXXX: Arrow snapshots + manifest.json)
    ├── worker 0 ─┐ map the snapshots read-only (one copy of the pages in the kernel),
    ├── worker 1  │ keep their own redis_connection/static values and HTTP loop,
    └── ...      ─┘ follow new generations (server/_follower.py), exit when the pipe from
                    the supervisor reaches end-of-file

A config change (file watch, SIGHUP, ``POST /admin/reload`` in any worker) is
decided by the supervisor alone: it reads the file, validates the bytes
(engine, resources, dependencies), fetches and publishes their data
resources, then publishes the bytes themselves as the next config
generation in the store's manifest. Every worker's follower sees it within
one poll and rebuilds from exactly those bytes (never from the file); a bad
config is logged once, here, and publishes nothing, so no worker switches.
Admin refreshes and pins of shared resources reach the supervisor over the
control channel (``server/_control.py``): one source read, whatever worker
was asked, and every worker maps the result. A worker that exits is started again (at most
``MAX_RESTARTS`` within ``RESTART_WINDOW_SECONDS``) and maps the current
snapshots without any read of a data source.

Guarantees:
- Only this process writes the store, and only its publisher Manager's refresh
  threads and the reload path publish. ``_reload_lock`` serialises reloads,
  pins and unpins (each waits at most ``start_timeout`` for it), so the pins
  carried into a new publisher and the ``_pins`` entry describe the same one.
- A config generation is published only after its data resources were, so a
  worker building it finds every snapshot it names.
- Each worker holds the read end of a pipe whose write end only this process
  holds: when this process dies, every worker sees end-of-file and stops. A
  worker still starting (no follower yet) is stopped by ``PR_SET_PDEATHSIG``
  (Linux; workers are spawned only from the main thread, which it watches).
- At exit, workers are stopped (SIGTERM, then SIGKILL after the drain time),
  then the store's directory is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

import resources
from pineapple import PineappleError, resource

from ._build import Builder, BuildError, read_config_file
from ._config import Config
from ._control import CONTROL_SOCKET, ControlError, ControlServer
from ._reloader import ReloadOutcome, Trigger
from ._shared import (
    PINS_ENTRY,
    RELOAD_ENTRY,
    SharedStore,
    publishing_registry,
)
from ._watcher import ConfigWatcher
from ._worker_main import worker_main

__all__ = ["MAX_RESTARTS", "RESTART_WINDOW_SECONDS", "Supervisor", "run_supervisor"]

MAX_RESTARTS = 5
"""A worker exiting more often than this within the window makes the supervisor give up."""
RESTART_WINDOW_SECONDS = 60.0
_MAX_NAME_BYTES = 256

_log = logging.getLogger("pineapple.server")


class _Worker:
    """One worker process and the write end of its pipe."""

    def __init__(self, index: int, proc: multiprocessing.process.BaseProcess, pipe: Connection):
        self.index = index
        self.proc = proc
        self.pipe = pipe


class Supervisor:
    """Owns the config, the publisher Manager, the store and the worker processes."""

    def __init__(self, config: Config, sock: socket.socket) -> None:
        self.config = config
        self.sock = sock
        self.store = SharedStore.create(config.shared_dir)
        self.publisher: resource.Manager | None = None
        self.workers: list[_Worker] = []
        self.stopping = threading.Event()
        self._context = multiprocessing.get_context("spawn")
        self._reload_lock = threading.Lock()
        self._restarts: deque[float] = deque()
        self._watcher: ConfigWatcher | None = None
        self._control = ControlServer(self.store.path / CONTROL_SOCKET, self.handle)
        self._accepted_hash: str | None = None
        self._failed_hash: str | None = None
        self.generation = 0
        """The config generation every worker serves or is switching to."""
        self.last: ReloadOutcome | None = None

    # -- data ---------------------------------------------------------------------------

    def _registry(self) -> resource.Registry:
        base = self.config.registry or resource.default_registry()
        return publishing_registry(base, self.store)

    def load(self, data: bytes, carry_over: resource.Manager | None = None) -> resource.Manager:
        """Fetch and publish every data resource of ``data``; the started Manager."""
        manager = resource.Manager(self._registry(), start_timeout=self.config.start_timeout)
        try:
            manager.load_from_root_config(
                data,
                carry_over=carry_over,
                env=self.config.env,
                base_dir=Path(self.config.path).parent,
            )
            manager.start()
        except Exception:
            manager.stop()
            raise
        return manager

    def _accept(self, data: bytes, digest: str) -> int:
        """Validate ``data``, publish its data, then its bytes; the new config generation.

        Raises (``BuildError`` and whatever a fetch raises) with nothing published
        but the data snapshots of the new entries, which no manifest config names.
        """
        Builder(self.config).check(data)  # engine, resources, dependencies: no fetch
        manager = self.load(data, carry_over=self.publisher)
        try:
            self._carry_pins(self.publisher, manager)
            generation = self.store.publish_config(data, digest)
        except Exception:
            manager.stop()
            raise
        old, self.publisher = self.publisher, manager
        self._accepted_hash, self._failed_hash, self.generation = digest, None, generation
        if old is not None:
            old.stop()
        self._publish_pins()
        return generation

    def reload(self, trigger: Trigger = "signal", force: bool = False) -> ReloadOutcome:
        """Decide a config change once (see module docs); never raises a build error.

        Waits at most ``start_timeout`` seconds for a reload in progress. The
        watcher and the poll do not retry (nor report again) content that failed.
        """
        started = time.monotonic()
        if not self._reload_lock.acquire(timeout=self.config.start_timeout):
            return ReloadOutcome(
                "error",
                trigger,
                time.time(),
                time.monotonic() - started,
                None,
                error=f"another reload has been running for over {self.config.start_timeout:g}s",
                step="busy",
            )
        try:
            return self._reload(trigger, force, started)
        finally:
            self._reload_lock.release()

    def _reload(self, trigger: Trigger, force: bool, started: float) -> ReloadOutcome:
        if self.stopping.is_set():
            return ReloadOutcome("error", trigger, time.time(), 0.0, None, error="shutting down")
        try:
            data = read_config_file(self.config.path, self.config.max_config_bytes)
        except BuildError as exc:
            return self._refused(trigger, started, None, exc)
        digest = hashlib.sha256(data).hexdigest()
        if not force and digest == self._accepted_hash:
            recovered = self.last is not None and self.last.result == "error"
            self._failed_hash = None
            outcome = ReloadOutcome(
                "unchanged", trigger, time.time(), 0.0, digest, serial=self.generation
            )
            if recovered or trigger not in ("watch", "poll"):
                _log.info("config %s unchanged (%s): nothing to reload", digest[:12], trigger)
                self._record(outcome)
            return outcome
        if trigger in ("watch", "poll") and digest == self._failed_hash and self.last is not None:
            return self.last  # reported once already
        try:
            generation = self._accept(data, digest)
        except Exception as exc:  # reported once, here; no worker is told
            return self._refused(trigger, started, digest, exc)
        _log.info(
            "config %s reloaded (%s): generation %d; %d workers follow",
            digest[:12],
            trigger,
            generation,
            len(self.workers),
        )
        return self._record(
            ReloadOutcome(
                "ok",
                trigger,
                time.time(),
                time.monotonic() - started,
                digest,
                serial=generation,
            )
        )

    def _refused(
        self, trigger: Trigger, started: float, digest: str | None, exc: Exception
    ) -> ReloadOutcome:
        self._failed_hash = digest
        step = exc.step if isinstance(exc, BuildError) else "start"
        _log.error(
            "config reload (%s) refused, every worker keeps config generation %d: %s",
            trigger,
            self.generation,
            exc,
        )
        outcome = ReloadOutcome(
            "error",
            trigger,
            time.time(),
            time.monotonic() - started,
            digest,
            serial=self.generation,
            error=str(exc),
            step=step,
        )
        return self._record(outcome)

    def _record(self, outcome: ReloadOutcome) -> ReloadOutcome:
        """Keep ``outcome`` and show it to every worker (``_reload`` in the manifest)."""
        self.last = outcome
        try:
            self.store.amend(RELOAD_ENTRY, outcome.to_dict())
        except resources.SnapshotWriteError as exc:
            _log.warning("cannot record the reload outcome: %s", exc)
        return outcome

    # -- pins ---------------------------------------------------------------------------

    @staticmethod
    def _pins(manager: resource.Manager) -> dict[str, str]:
        """``name -> reason`` of the shared resources pinned in ``manager``."""
        pins: dict[str, str] = {}
        for status in manager.status():
            pinned = status.condition("Pinned")
            shared = status.type in resources.SHARED_TYPES
            if shared and pinned is not None and pinned.status == "True":
                pins[status.name] = pinned.message
        return pins

    def _carry_pins(self, old: resource.Manager | None, new: resource.Manager) -> None:
        """Pin in ``new`` what was pinned in ``old`` (a config reload keeps pins)."""
        if old is None:
            return
        names = set(new.names())
        for name, reason in self._pins(old).items():
            if name in names and new.status_of(name).type in resources.SHARED_TYPES:
                new.pin(name, reason)

    def _publish_pins(self) -> None:
        if self.publisher is not None:
            self.store.amend(PINS_ENTRY, self._pins(self.publisher))

    # -- the control channel ------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one control request from a worker (see ``server/_control.py``)."""
        op = request.get("op")
        force = request.get("force") is True
        if op == "reload":
            trigger: Trigger = "signal" if request.get("trigger") == "signal" else "admin"
            return self.reload(trigger, force=force).to_dict()
        name = request.get("name")
        if not isinstance(name, str) or len(name.encode()) > _MAX_NAME_BYTES:
            raise ControlError(f"control request {op!r}: a resource name is required")
        if op == "refresh":
            result = self._shared_publisher(name).refresh(name, force=force)
            return {"result": result, "forced": force}
        if op in ("pin", "unpin"):
            return self._pin(name, op == "pin")
        raise ControlError(f"unknown control request {op!r}")

    def _shared_publisher(self, name: str) -> resource.Manager:
        publisher = self.publisher
        if publisher is None:
            raise resource.ManagerStateError("the supervisor has not loaded the config yet")
        if publisher.status_of(name).type not in resources.SHARED_TYPES:
            raise ControlError(f"resource {name!r} is not shared: each worker owns its own")
        return publisher

    def _pin(self, name: str, pin: bool) -> dict[str, Any]:
        if not self._reload_lock.acquire(timeout=self.config.start_timeout):
            raise resource.ManagerStateError("a config reload is running; try again")
        try:
            publisher = self._shared_publisher(name)
            if pin:
                publisher.pin(name)
                result = "pinned"
            else:
                result = "unpinned" if publisher.unpin(name) else "not_pinned"
            self._publish_pins()
            return {"result": result}
        finally:
            self._reload_lock.release()

    # -- processes ----------------------------------------------------------------------

    def _spawn(self, index: int) -> _Worker:
        reader, writer = self._context.Pipe(duplex=False)
        proc = self._context.Process(
            target=worker_main,
            args=(self.config, self.sock, str(self.store.path), reader, os.getpid()),
            name=f"pineapple-worker-{index}",
        )
        proc.start()
        reader.close()  # the worker holds the only read end; this process the only write end
        return _Worker(index, proc, writer)

    def _signal_workers(self, signum: int) -> None:
        for worker in self.workers:
            pid = worker.proc.pid
            if pid is not None and worker.proc.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)

    def serve(self) -> int:
        """Load, start the workers and supervise them until SIGTERM/SIGINT; the exit code."""
        try:
            data = read_config_file(self.config.path, self.config.max_config_bytes)
            self._accept(data, hashlib.sha256(data).hexdigest())
            self._control.start()
        except (PineappleError, OSError) as exc:
            _log.error("not serving %s: %s", self.config.path, exc)
            return 1
        assert self.publisher is not None
        _log.info(
            "published %d shared resource(s) in %s; starting %d workers",
            len(self.publisher.names()),
            self.store.path,
            self.config.workers,
        )
        self.workers = [self._spawn(i) for i in range(self.config.workers)]
        if self.config.watch:
            self._watcher = ConfigWatcher(
                self.config.path,
                self.reload,
                debounce_seconds=self.config.debounce_seconds,
                poll_seconds=self.config.poll_seconds,
                stop_timeout=self.config.start_timeout,
            )
            self._watcher.start()
        return self._supervise()

    def _supervise(self) -> int:
        # Bounded: each wait lasts at most 0.5 s; the loop ends when every worker has exited.
        failed = False
        while self.workers:
            sentinels = [w.proc.sentinel for w in self.workers]
            multiprocessing.connection.wait(sentinels, timeout=0.5)
            for worker in [w for w in self.workers if w.proc.exitcode is not None]:
                code = worker.proc.exitcode
                worker.pipe.close()
                if self.stopping.is_set():
                    self.workers.remove(worker)
                    failed |= code != 0
                    continue
                _log.error("%s exited with %s; starting it again", worker.proc.name, code)
                if not self._may_restart():
                    _log.error(
                        "workers exited %d times within %.0fs; giving up",
                        MAX_RESTARTS,
                        RESTART_WINDOW_SECONDS,
                    )
                    self.workers.remove(worker)
                    self.stop()
                    failed = True
                    continue
                self.workers[self.workers.index(worker)] = self._spawn(worker.index)
        return 1 if failed else 0

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > RESTART_WINDOW_SECONDS:
            self._restarts.popleft()
        if len(self._restarts) >= MAX_RESTARTS:
            return False
        self._restarts.append(now)
        return True

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop supervising: forward ``signum`` to every worker (they drain and exit)."""
        self.stopping.set()
        self._signal_workers(signum)

    def close(self) -> None:
        """After the workers are gone: stop the watcher and publisher, delete the store."""
        if self._watcher is not None:
            self._watcher.stop()
        self._control.stop()
        deadline = time.monotonic() + self.config.drain_seconds + 5
        for worker in self.workers:  # only left when supervision ended abnormally
            worker.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.proc.exitcode is None:
                worker.proc.kill()
        if self.publisher is not None:
            self.publisher.stop()
        self.store.remove()


def run_supervisor(config: Config, sock: socket.socket) -> int:
    """Serve ``config`` with ``config.workers`` worker processes; the exit code."""
    supervisor = Supervisor(config, sock)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            threading.Thread(
                target=supervisor.reload, args=("signal",), name="pineapple-sighup"
            ).start()
        else:
            supervisor.stop(signum)

    previous = {
        s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    }
    try:
        return supervisor.serve()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        supervisor.close()
