"""A timer thread plus a small worker pool: runs refreshes when they are due.

One scheduler serves every resource of a Manager. The timer thread only
keeps a heap of due times and hands due jobs to the worker pool, so a slow
fetch of one resource never delays the timers of the others; at most
``workers`` fetches run at once.

Guarantees:
- ``call_later`` after ``stop`` is a no-op; a job already handed to the pool
  when ``stop`` is called runs to completion and ``stop`` waits for it;
  jobs still waiting in the heap are dropped.
- The heap is only touched under ``_cond``; the timer thread never runs a job
  itself.
- No job can kill the timer thread or a worker: a job's exceptions (even
  ``BaseException`` ones such as ``SystemExit``) are logged by ``_guard``;
  delays are clamped to 0 .. ``MAX_DELAY`` and every condition wait to
  ``MAX_WAIT`` (a wait above ``threading.TIMEOUT_MAX`` raises OverflowError).
- Should the timer thread still end while not stopped, ``failure`` says why
  (set under ``_cond`` by the dying thread, or derived from the thread being
  dead); the Manager shows it as ``Fresh=False`` and ``/readyz`` answers 503.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from .._error_text import capped

__all__ = ["MAX_DELAY", "MAX_WAIT", "Scheduler"]

_log = logging.getLogger("pineapple.resource")

MAX_DELAY = 1e9
"""The longest delay ``call_later`` keeps, in seconds (~31 years; longer ones are clamped)."""

MAX_WAIT = 3600.0
"""The longest single wait of the timer thread, in seconds (it re-checks the heap after)."""


class Scheduler:
    """Runs callables on a worker pool at monotonic times."""

    def __init__(self, name: str = "pineapple", workers: int = 4) -> None:
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._failure: str | None = None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{name}-refresh")
        self._timer = threading.Thread(target=self._run, name=f"{name}-timer", daemon=True)
        self._timer.start()

    def submit(self, job: Callable[[], object]) -> Future[None] | None:
        """Run ``job`` on the pool now; None once stopped."""
        with self._cond:
            if self._stopped:
                return None
            return self._pool.submit(self._guard, job)

    def call_later(self, delay: float, job: Callable[[], object]) -> None:
        """Run ``job`` on the pool after ``delay`` seconds (no-op once stopped)."""
        # NaN and negative delays run now; delays past MAX_DELAY wait MAX_DELAY.
        delay = min(delay, MAX_DELAY) if delay >= 0 and not math.isnan(delay) else 0.0
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), job))
            self._cond.notify()

    def pending(self) -> int:
        """How many jobs wait in the heap."""
        with self._cond:
            return len(self._heap)

    @property
    def failure(self) -> str | None:
        """Why the timer thread ended although the scheduler was not stopped, else None."""
        with self._cond:
            if self._failure is None and not self._stopped and not self._timer.is_alive():
                self._failure = "the refresh timer thread exited"
            return self._failure

    def stop(self, wait: bool = True) -> None:
        """Drop waiting jobs, end the threads; ``wait``: also wait for running jobs.

        Idempotent.
        """
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
            self._heap.clear()
            self._cond.notify_all()
        self._timer.join()
        self._pool.shutdown(wait=wait, cancel_futures=True)

    @staticmethod
    def _guard(job: Callable[[], object]) -> None:
        try:
            job()
        except BaseException:  # a job's own errors are its business; never kill a worker
            _log.exception("scheduled job failed")

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:
            reason = capped(f"the refresh timer thread died: {type(exc).__name__}: {exc}")
            with self._cond:
                self._failure = reason
            _log.critical("%s; no resource will refresh until the next reload", reason)

    def _loop(self) -> None:
        # Bounded: each wait lasts at most MAX_WAIT; the loop ends only on stop.
        while True:
            with self._cond:
                while not self._stopped:
                    if not self._heap:
                        self._cond.wait(MAX_WAIT)
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(min(wait, MAX_WAIT))
                if self._stopped:
                    return
                _, _, job = heapq.heappop(self._heap)
                self._pool.submit(self._guard, job)
