"""``pineapple serve --workers N``: one supervisor that loads, N workers that serve.

::

    supervisor ── reads + validates the config once; fetches every data resource
    │             (feed_data, json_file, csv_file) and publishes it into a SharedStore
    │             (/dev/shm/pineapple-XXXX: Arrow snapshots + manifest.json)
    ├── worker 0 ─┐ map the snapshots read-only (one copy of the pages in the kernel),
    ├── worker 1  │ keep their own redis_connection/static values and HTTP loop,
    └── ...      ─┘ follow new generations (server/_follower.py), exit when the pipe from
                    the supervisor reaches end-of-file

A config change (file watch, SIGHUP) is decided by the supervisor: it builds
and validates the new config and publishes its data resources once, then
tells every worker (SIGHUP) to switch; a bad config is reported once and no
worker is told. A worker that exits is started again (at most
``MAX_RESTARTS`` within ``RESTART_WINDOW_SECONDS``) and maps the current
snapshots without any read of a data source.

Guarantees:
- Only this process writes the store, and only its publisher Manager's refresh
  threads and the reload path (serialised by ``_reload_lock``) publish.
- Each worker holds the read end of a pipe whose write end only this process
  holds: when this process dies, every worker sees end-of-file and stops. A
  worker still starting (no follower yet) is stopped by ``PR_SET_PDEATHSIG``
  (Linux; workers are spawned only from the main thread, which it watches).
- At exit, workers are stopped (SIGTERM, then SIGKILL after the drain time),
  then the store's directory is deleted.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time
from collections import deque
from dataclasses import replace
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from pineapple import resource

from ._build import BuildError, import_plugins, read_config_file
from ._config import Config
from ._follower import Follower
from ._service import Service
from ._shared import SharedStore, mapped_registry, publishing_registry
from ._watcher import ConfigWatcher

__all__ = ["MAX_RESTARTS", "RESTART_WINDOW_SECONDS", "Supervisor", "worker_main"]

MAX_RESTARTS = 5
"""A worker exiting more often than this within the window makes the supervisor give up."""
RESTART_WINDOW_SECONDS = 60.0
_PR_SET_PDEATHSIG = 1

_log = logging.getLogger("pineapple.server")


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGTERM this process when its parent dies (before the follower runs).

    Covers a supervisor dying while this worker still starts; the follower's
    pipe covers the rest (and other systems). If the parent is already gone, exit.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the follower's end-of-file check alone
    if os.getppid() != parent_pid:
        raise SystemExit(1)


def worker_main(
    config: Config, sock: socket.socket, store_path: str, parent: Connection, parent_pid: int
) -> None:
    """A worker process: serve with every shared resource read from the store."""
    from ._run import _configure_logging, _serve, exit_within

    _die_with_parent(parent_pid)
    _configure_logging(config.log_level)
    import_plugins(config.plugins)
    store = SharedStore(store_path)
    base = config.registry or resource.default_registry()
    worker_config = replace(config, registry=mapped_registry(base, store), watch=False, workers=1)
    followers: list[Follower] = []

    def attach(service: Service) -> None:
        follower = Follower(store, service.holder, parent)
        follower.start()
        followers.append(follower)

    try:
        code = _serve(worker_config, sock, attach)
    finally:
        for follower in followers:
            follower.stop()
    exit_within(code)
    raise SystemExit(code)


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

    # -- data ---------------------------------------------------------------------------

    def _registry(self) -> resource.Registry:
        base = self.config.registry or resource.default_registry()
        return publishing_registry(base, self.store)

    def load(self, carry_over: resource.Manager | None = None) -> resource.Manager:
        """Fetch and publish every data resource of the config file; the started Manager."""
        data = read_config_file(self.config.path, self.config.max_config_bytes)
        manager = resource.Manager(self._registry(), start_timeout=self.config.start_timeout)
        try:
            manager.load_from_root_config(data, carry_over=carry_over, env=self.config.env)
            manager.start()
        except resource.StartError:
            manager.stop()
            raise
        except Exception:
            manager.stop()
            raise
        return manager

    def reload(self, trigger: Any = "signal") -> None:
        """Decide a config change once: validate, publish, then tell every worker."""
        with self._reload_lock:
            if self.stopping.is_set():
                return
            from ._run import check

            try:
                check(self.config)
                manager = self.load(carry_over=self.publisher)
            except (BuildError, Exception) as exc:  # reported once, here; no worker is told
                _log.error("reload (%s) refused, workers keep their config: %s", trigger, exc)
                return
            old, self.publisher = self.publisher, manager
            if old is not None:
                old.stop()
            _log.info("config reloaded (%s); telling %d workers", trigger, len(self.workers))
            self._signal_workers(signal.SIGHUP)

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
            self.publisher = self.load()
        except Exception as exc:
            _log.error("not serving %s: %s", self.config.path, exc)
            return 1
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
