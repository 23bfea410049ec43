"""``pineapple serve --workers N``: one supervisor that loads, N workers that serve.

::

    supervisor ── reads + validates the config once; fetches every resource whose type
    │             declares a codec (the built-in data types, plugin types that opt in)
    │             and publishes it into a SharedStore
    │             (/dev/shm/pineapple-XXXX: Arrow snapshots + manifest.json)
    ├── worker 0 ─┐ map the snapshots read-only (one copy of the pages in the kernel),
    ├── worker 1  │ fetch their own values of every other type, serve HTTP,
    └── ...      ─┘ follow new generations (worker/_follower.py), exit when the pipe from
                    the supervisor reaches end-of-file

The supervisor's :class:`~server.workers.supervisor._authority.ConfigAuthority` decides every
config change and every admin action on a shared resource, once, whatever
worker was asked (see ``server/workers/supervisor/_authority.py``); this module supervises the
processes. A worker that exits is started again and maps the current
snapshots without any read of a data source. Restarts back off: the n-th
exit in a row waits ``restart_delay(n)`` (0.5 s doubling, at most
``RESTART_BACKOFF_MAX_SECONDS``; a worker that ran ``RESTART_RESET_SECONDS``
starts the count again). The supervisor never gives up on a worker: a worker
that cannot start at all (it exits, or never beats) is tried again at the
capped delay for as long as the supervisor runs, while the others serve the
last good generation; with none running, the port stays open and
connections wait in its backlog. Only SIGTERM/SIGINT (or a supervisor that
cannot load its first config) end the pod. A worker that stops beating
(``server/workers/_liveness.py``: stopped, or no longer following) is killed and
replaced the same way, but never the last serving workers together: while no
other worker serves, silent workers are killed one at a time, one every
``LIVENESS_TIMEOUT_SECONDS`` (a replacement that serves ends the wait), so a
pod whose workers all fall silent at once (one slow build everywhere) keeps
the others while the first is replaced.

Guarantees:
- Only this process writes the store (through its ``ConfigAuthority``).
- Each worker holds the read end of a pipe whose write end only this process
  holds: when this process dies, every worker sees end-of-file and stops. A
  worker still starting (no follower yet) is stopped by ``PR_SET_PDEATHSIG``
  (Linux; workers are spawned only from the main thread, which it watches).
- A worker slot is either running (in ``workers``) or due to start again (in
  ``_due``), never both; only the main thread's supervision loop changes them.
- The pod's status is posted for the workers on its board's own thread
  (``_pod_status``), never by this loop: a slow status cannot hold up the
  heartbeats; its age tells a worker whether a supervisor still runs.
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
from collections.abc import Callable
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

from pineapple import PineappleError
from pineapple.resource import ResourceStatus

from ..._config import Config, Wiring
from ..._cpu_pin import cpu_for
from ..._watcher import ConfigWatcher
from ...metrics._metrics import ServerMetrics
from ...metrics._pod_metrics import PodMetrics
from ...metrics._served import ConfigState, Decided
from .._control import CONTROL_SOCKET, ControlServer
from .._liveness import LIVENESS_TIMEOUT_SECONDS, BeatClock
from .._store_format import METRICS_DIR
from ..worker._main import worker_main
from ._authority import ConfigAuthority
from ._pod_stage import PodStage
from ._publishing import SharedStore

__all__ = [
    "RESTART_BACKOFF_MAX_SECONDS",
    "RESTART_BACKOFF_SECONDS",
    "RESTART_RESET_SECONDS",
    "SWEEP_SECONDS",
    "Supervisor",
    "restart_delay",
    "run_supervisor",
]

RESTART_BACKOFF_SECONDS = 0.5
"""The wait before a worker's first restart; each exit in a row doubles it."""
RESTART_BACKOFF_MAX_SECONDS = 30.0
"""The longest wait before a restart (a worker that cannot start is tried this often)."""
RESTART_RESET_SECONDS = 60.0
"""A worker that ran this long before it exited starts its restart count again."""
SWEEP_SECONDS = 0.5
"""How often the supervisor removes the snapshots no config names and no worker needs."""

_log = logging.getLogger("pineapple.server")


def restart_delay(failures: int) -> float:
    """Seconds to wait before the restart that follows ``failures`` exits in a row (>= 1)."""
    doublings = min(max(failures, 1) - 1, 16)  # 2**16 * 0.5 s is far past the cap
    return min(RESTART_BACKOFF_MAX_SECONDS, RESTART_BACKOFF_SECONDS * float(1 << doublings))


_NOTICE = b"m"
"""What the supervisor writes on a worker's pipe when the manifest changed (a hint)."""


class _Worker:
    """One worker process, the write end of its pipe and the clock of its beats."""

    def __init__(
        self,
        index: int,
        proc: multiprocessing.process.BaseProcess,
        pipe: Connection,
        beats: BeatClock,
    ) -> None:
        self.index = index
        self.proc = proc
        self.pipe = pipe
        self.beats = beats
        self.started = time.monotonic()
        self.killed = False
        """Killed for its silence (its exit is then expected)."""
        self._pipe_lock = threading.Lock()
        """Serialises :meth:`wake` (a refresh thread) and :meth:`close` (the loop): a notice
        is never written to a descriptor closed (and maybe reused) meanwhile."""

    def wake(self) -> None:
        """A notice on the pipe (non-blocking: dropped when full, closed or gone)."""
        with self._pipe_lock, contextlib.suppress(OSError):  # BlockingIOError, BrokenPipe
            self.pipe.send_bytes(_NOTICE)

    def close(self) -> None:
        with self._pipe_lock:
            self.pipe.close()
        self.beats.close()


class Supervisor:
    """Owns the store, the config authority and the worker processes."""

    def __init__(
        self,
        config: Config,
        sock: socket.socket,
        wiring: Wiring | None = None,
        attach: Callable[[ConfigAuthority], None] | None = None,
    ) -> None:
        """``wiring``: what the authority alone builds with (a fleet pod's); ``attach``: runs
        once the first config is published, before the workers start (a fleet pod follows)."""
        self.config = config
        self.sock = sock
        self._attach = attach
        self.store = SharedStore.create(config.shared_dir)
        self.store.on_change = self._wake_workers
        self.workers: list[_Worker] = []
        self.stopping = threading.Event()
        self.pod_metrics = PodMetrics.create(self.store.path / METRICS_DIR)
        decided = Decided(self._shared_statuses, self._serving_config, self._worker_counts)
        self.metrics = ServerMetrics(lambda: None, self.pod_metrics, decided)
        """The supervisor's own: its fetches, reloads, the state of what it decides (the
        shared resources, the config, the workers) and process_* (flushed every sweep)."""
        self.authority = ConfigAuthority(config, self.store, self.stopping, self.metrics, wiring)
        self._context = multiprocessing.get_context("spawn")
        self._failures: dict[int, int] = {}
        """``slot -> exits in a row`` (reset by a run of ``RESTART_RESET_SECONDS``)."""
        self._due: dict[int, float] = {}
        """``slot -> monotonic time`` of the restart of a slot whose worker exited."""
        self._swept = 0.0
        self._lone_kill_at = 0.0
        """Monotonic time before which no silent worker is killed while none other serves."""
        self._watcher: ConfigWatcher | None = None
        self._flush_lock = threading.Lock()
        """Serialises the flushes of the supervisor's metrics (its loop, the control channel)."""
        self._control = ControlServer(self.store.path / CONTROL_SOCKET, self._decide)

    def _decide(self, request: dict[str, Any]) -> dict[str, Any]:
        """A worker's control request, answered by the authority; the supervisor's metrics are
        flushed before the answer, so a scrape after it shows what was decided (as the
        pod's status is posted)."""
        try:
            return self.authority.handle(request)
        finally:
            self._flush_metrics()

    def _flush_metrics(self) -> None:
        with self._flush_lock:
            self.metrics.flush()  # never raises: a failure is counted and logged

    def _shared_statuses(self) -> list[ResourceStatus]:
        publisher = self.authority.publisher
        return [] if publisher is None else publisher.status()

    def _serving_config(self) -> ConfigState | None:
        serving = self.authority.serving_config()
        if serving is None:
            return None
        content_hash, generation, accepted_at = serving
        return ConfigState(generation, content_hash, accepted_at)

    def _worker_counts(self) -> tuple[int, int]:
        """Workers wanted, and those serving (beating, not killed); read on a scrape's
        flush (this loop's thread, or a route's: a list copy is enough)."""
        workers = list(self.workers)
        serving = sum(1 for w in workers if not w.killed and w.beats.serving)
        return self.config.workers, serving

    def _wake_workers(self) -> None:
        """Tell every worker the manifest changed (a notice on its pipe): its follower maps
        the new snapshot now, not at its next poll. Never blocks: the pipe's write end is
        non-blocking and a notice (5 bytes, one atomic write) that does not fit is dropped,
        as is one to a worker gone (the poll still finds the change)."""
        for worker in list(self.workers):  # a copy: the loop may respawn meanwhile
            worker.wake()

    def _spawn(self, index: int) -> _Worker:
        reader, writer = self._context.Pipe(duplex=False)
        os.set_blocking(writer.fileno(), False)  # _wake_workers never waits on a worker
        beats, beat_writer = self._context.Pipe(duplex=False)
        proc = self._context.Process(
            target=worker_main,
            args=(self.config, self.sock, str(self.store.path), reader, os.getpid(), beat_writer),
            kwargs={"cpu": cpu_for(index) if self.config.pin_cpus else None, "index": index},
            name=f"pineapple-worker-{index}",
        )
        try:
            proc.start()
        except BaseException:
            for conn in (reader, writer, beats, beat_writer):
                conn.close()
            raise
        reader.close()  # the worker holds the only read end; this process the only write end
        beat_writer.close()  # and the only write end of its beats
        return _Worker(index, proc, writer, BeatClock(beats))

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
            self.authority.board.start()  # posted before any worker reads it
            self._control.start()
            if self._attach is not None:
                self._attach(self.authority)
            PodStage(self.authority, self.config)  # the stage ops, seen before the others
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
        # Bounded: each wait lasts at most SWEEP_SECONDS; ends when no worker runs and,
        # once stopping, none is due to start again.
        failed = False
        while self.workers or (self._due and not self.stopping.is_set()):
            now = time.monotonic()
            timeout = min([SWEEP_SECONDS, *(max(0.0, due - now) for due in self._due.values())])
            waitables: list[int | Connection] = [w.proc.sentinel for w in self.workers]
            waitables += [w.beats.conn for w in self.workers if w.beats.open]
            if waitables:
                multiprocessing.connection.wait(waitables, timeout=timeout)
            else:
                self.stopping.wait(timeout)
            self._sweep()
            for worker in self.workers:  # after the sweep, which may wait for a publish
                worker.beats.hear()
            for worker in [w for w in self.workers if w.proc.exitcode is not None]:
                self.workers.remove(worker)
                worker.close()
                if self.stopping.is_set():
                    # A worker still starting when the pod was asked to stop dies of that
                    # SIGTERM (its handlers come once it serves): a stop, not a failure.
                    failed |= worker.proc.exitcode not in (0, -signal.SIGTERM)
                else:
                    self._restart_later(worker)
            if not self.stopping.is_set():
                self._kill_silent()
                self._start_due()
        return 1 if failed else 0

    def _restart_later(self, worker: _Worker) -> None:
        """Schedule the restart of ``worker``'s slot after the backoff its exits have earned."""
        now = time.monotonic()
        ran = now - worker.started
        failures = 1 if ran >= RESTART_RESET_SECONDS else self._failures.get(worker.index, 0) + 1
        self._failures[worker.index] = failures
        delay = restart_delay(failures)
        self._due[worker.index] = now + delay
        _log.error(
            "%s (pid %s) exited with %s after %.1fs; starting it again in %gs (exit %d in a row)",
            worker.proc.name,
            worker.proc.pid,
            worker.proc.exitcode,
            ran,
            delay,
            failures,
        )

    def _kill_silent(self) -> None:
        """Kill the workers that have not beaten within their allowance (``_liveness``).

        Never the last serving ones together: with no other worker serving, one
        silent worker is killed per ``LIVENESS_TIMEOUT_SECONDS``.
        """
        now = time.monotonic()
        silent: list[tuple[_Worker, float]] = []
        serving = False  # whether a worker that is not silent serves
        for worker in self.workers:  # bounded: the workers
            seconds = None if worker.killed else worker.beats.silent_for(now)
            if seconds is not None:
                silent.append((worker, seconds))
            elif not worker.killed:
                serving |= worker.beats.serving
        if not silent:
            return
        if not serving:
            if now < self._lone_kill_at:
                return  # the last ones: one at a time
            silent = silent[:1]
            self._lone_kill_at = now + LIVENESS_TIMEOUT_SECONDS
        for worker, seconds in silent:  # bounded: the workers
            _log.error(
                "%s (pid %s) has not beaten for %.1fs (stopped, stuck, or no longer following); "
                "killing it",
                worker.proc.name,
                worker.proc.pid,
                seconds,
            )
            worker.killed = True
            worker.proc.kill()  # SIGKILL: a stopped process dies too; its leases go with it

    def _start_due(self) -> None:
        """Start every slot whose restart is due; a failed spawn is tried again later."""
        now = time.monotonic()
        ready = sorted(i for i, due in self._due.items() if due <= now)
        if ready:
            self._sweep_metrics()  # a dead worker's counts are folded before its pid can recur
        for index in ready:
            try:
                worker = self._spawn(index)
            except OSError as exc:  # e.g. EAGAIN: no process could be made right now
                failures = self._failures.get(index, 0) + 1
                self._failures[index] = failures
                self._due[index] = now + restart_delay(failures)
                _log.error("cannot start worker %d (tried again later): %s", index, exc)
                continue
            del self._due[index]
            self.workers.append(worker)
            self.metrics.worker_restarts.inc()

    def _sweep(self) -> None:
        """Remove the shared snapshots no config names and no worker needs any more."""
        now = time.monotonic()
        if now - self._swept < SWEEP_SECONDS:
            return  # beats wake the loop more often than a sweep is worth
        self._swept = now
        try:
            self.store.sweep()
        except (PineappleError, OSError, ValueError) as exc:  # ValueError: a bad manifest
            _log.warning("cannot remove unnamed shared snapshots (tried again soon): %s", exc)
        self._sweep_metrics()

    def _sweep_metrics(self) -> None:
        """Flush the supervisor's metrics; fold every dead worker's into the archive.

        Runs before a dead worker is replaced (``exitcode`` reaps it here), so its
        pid cannot be a new worker's yet.
        """
        live = {os.getpid()} | {
            w.proc.pid for w in self.workers if w.proc.pid is not None and w.proc.exitcode is None
        }
        try:
            self._flush_metrics()
            for pid in self.pod_metrics.pids() - live:  # bounded: the processes started
                self.pod_metrics.retire(pid)
        except (OSError, TimeoutError, ValueError) as exc:
            _log.warning("cannot flush or fold metrics (tried again soon): %s", exc)

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop supervising: forward ``signum`` to every worker (they drain and exit).

        This process lets go of the listening socket (no worker is started again):
        once the last worker has closed its copy, a new connection is refused at
        once instead of waiting in a queue nobody accepts from, to be reset at exit.
        """
        self.stopping.set()
        # A reload's fetch in flight is cancelled (its query killed), off the signal handler.
        threading.Thread(
            target=self.authority.cancel, name="pineapple-cancel-reload", daemon=True
        ).start()
        self._signal_workers(signum)
        self.sock.close()

    def close(self) -> None:
        """After the workers are gone: stop the watcher and publisher, delete the store."""
        if self._watcher is not None:
            self._watcher.stop()
        self._control.stop()
        self.authority.board.stop()
        deadline = (
            time.monotonic() + self.config.shutdown_delay_seconds + self.config.drain_seconds + 5
        )
        for worker in self.workers:  # only left when supervision ended abnormally
            worker.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.proc.exitcode is None:
                worker.proc.kill()
            worker.close()
        self.authority.close()
        self.store.remove()


def run_supervisor(
    config: Config,
    sock: socket.socket,
    wiring: Wiring | None = None,
    attach: Callable[[ConfigAuthority], None] | None = None,
) -> int:
    """Serve ``config`` with ``config.workers`` worker processes; the exit code.

    ``wiring`` and ``attach``: a fleet pod's (see :class:`Supervisor`)."""
    supervisor = Supervisor(config, sock, wiring, attach)

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
