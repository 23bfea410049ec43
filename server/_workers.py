"""``pineapple serve --workers N``: one supervisor that loads, N workers that serve.

::

    supervisor ── reads + validates the config once; fetches every data resource
    │             (feed_data, json_file, csv_file) and publishes it into a SharedStore
    │             (/dev/shm/pineapple-XXXX: Arrow snapshots + manifest.json)
    ├── worker 0 ─┐ map the snapshots read-only (one copy of the pages in the kernel),
    ├── worker 1  │ keep their own redis_connection/static values and HTTP loop,
    └── ...      ─┘ follow new generations (server/_follower.py), exit when the pipe from
                    the supervisor reaches end-of-file

The supervisor's :class:`~server._authority.ConfigAuthority` decides every
config change and every admin action on a shared resource, once, whatever
worker was asked (see ``server/_authority.py``); this module supervises the
processes. A worker that exits is started again (at most ``MAX_RESTARTS``
within ``RESTART_WINDOW_SECONDS``) and maps the current snapshots without any
read of a data source.

Guarantees:
- Only this process writes the store (through its ``ConfigAuthority``).
- Each worker holds the read end of a pipe whose write end only this process
  holds: when this process dies, every worker sees end-of-file and stops. A
  worker still starting (no follower yet) is stopped by ``PR_SET_PDEATHSIG``
  (Linux; workers are spawned only from the main thread, which it watches).
- At exit, workers are stopped (SIGTERM, then SIGKILL after the shutdown delay and
  the drain time), and this process closes its copy of the listening socket,
  then the store's directory is deleted. Before that, every ``SWEEP_SECONDS``,
  the snapshots of entries that no config names any more and that no worker
  may still build from are removed (``SharedStore.sweep``).
"""

from __future__ import annotations

import contextlib
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
from types import FrameType

from pineapple import PineappleError

from ._authority import ConfigAuthority
from ._config import Config
from ._control import CONTROL_SOCKET, ControlServer
from ._shared import SharedStore
from ._watcher import ConfigWatcher
from ._worker_main import worker_main

__all__ = [
    "MAX_RESTARTS",
    "RESTART_WINDOW_SECONDS",
    "SWEEP_SECONDS",
    "Supervisor",
    "run_supervisor",
]

MAX_RESTARTS = 5
"""A worker exiting more often than this within the window makes the supervisor give up."""
RESTART_WINDOW_SECONDS = 60.0
SWEEP_SECONDS = 0.5
"""How often the supervisor removes the snapshots no config names and no worker needs."""

_log = logging.getLogger("pineapple.server")


class _Worker:
    """One worker process and the write end of its pipe."""

    def __init__(self, index: int, proc: multiprocessing.process.BaseProcess, pipe: Connection):
        self.index = index
        self.proc = proc
        self.pipe = pipe


class Supervisor:
    """Owns the store, the config authority and the worker processes."""

    def __init__(self, config: Config, sock: socket.socket) -> None:
        self.config = config
        self.sock = sock
        self.store = SharedStore.create(config.shared_dir)
        self.workers: list[_Worker] = []
        self.stopping = threading.Event()
        self.authority = ConfigAuthority(config, self.store, self.stopping)
        self._context = multiprocessing.get_context("spawn")
        self._restarts: deque[float] = deque()
        self._watcher: ConfigWatcher | None = None
        self._control = ControlServer(self.store.path / CONTROL_SOCKET, self.authority.handle)

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
            self.authority.load_initial()
            self._control.start()
        except (PineappleError, OSError) as exc:
            _log.error("not serving %s: %s", self.config.path, exc)
            return 1
        assert self.authority.publisher is not None
        _log.info(
            "published %d shared resource(s) in %s; starting %d workers",
            len(self.authority.publisher.names()),
            self.store.path,
            self.config.workers,
        )
        self.workers = [self._spawn(i) for i in range(self.config.workers)]
        if self.config.watch:
            self._watcher = ConfigWatcher(
                self.config.path,
                self.authority.reload,
                debounce_seconds=self.config.debounce_seconds,
                poll_seconds=self.config.poll_seconds,
                stop_timeout=self.config.start_timeout,
            )
            self._watcher.start()
        return self._supervise()

    def _supervise(self) -> int:
        # Bounded: each wait lasts at most SWEEP_SECONDS; ends when every worker has exited.
        failed = False
        while self.workers:
            sentinels = [w.proc.sentinel for w in self.workers]
            multiprocessing.connection.wait(sentinels, timeout=SWEEP_SECONDS)
            self._sweep()
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

    def _sweep(self) -> None:
        """Remove the shared snapshots no config names and no worker needs any more."""
        try:
            self.store.sweep()
        except (PineappleError, OSError, ValueError) as exc:  # ValueError: a bad manifest
            _log.warning("cannot remove unnamed shared snapshots (tried again soon): %s", exc)

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > RESTART_WINDOW_SECONDS:
            self._restarts.popleft()
        if len(self._restarts) >= MAX_RESTARTS:
            return False
        self._restarts.append(now)
        return True

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop supervising: forward ``signum`` to every worker (they drain and exit).

        This process lets go of the listening socket (no worker is started again):
        once the last worker has closed its copy, a new connection is refused at
        once instead of waiting in a queue nobody accepts from, to be reset at exit.
        """
        self.stopping.set()
        self._signal_workers(signum)
        self.sock.close()

    def close(self) -> None:
        """After the workers are gone: stop the watcher and publisher, delete the store."""
        if self._watcher is not None:
            self._watcher.stop()
        self._control.stop()
        deadline = (
            time.monotonic() + self.config.shutdown_delay_seconds + self.config.drain_seconds + 5
        )
        for worker in self.workers:  # only left when supervision ended abnormally
            worker.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.proc.exitcode is None:
                worker.proc.kill()
        self.authority.close()
        self.store.remove()


def run_supervisor(config: Config, sock: socket.socket) -> int:
    """Serve ``config`` with ``config.workers`` worker processes; the exit code."""
    supervisor = Supervisor(config, sock)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            threading.Thread(
                target=supervisor.authority.reload, args=("signal",), name="pineapple-sighup"
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
