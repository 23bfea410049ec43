"""``Pacer``: how a long load on a refresh thread leaves the interpreter to request threads.

A ``feed_data`` load is seconds of pure-Python work (pymysql parses every row;
the indices are built row by row). Under the GIL, a thread serving requests
that releases the interpreter for a syscall gets it back only when the
loading thread lets go: after CPython's switch interval (5 ms) at worst, so
every socket call of a request can cost 5 ms, and an event loop making a few
per request is starved while the load runs. The loader therefore calls a
``Pacer`` at bounded points of its work (every few hundred rows; a pass over
a whole column walks it in ``pieces`` of ``PIECE_ROWS``); the pacer:

- returns at once until ``slice_seconds`` (1 ms) of work have passed since
  the last pause (calling it often is cheap);
- then sleeps ``probe_seconds``, which releases the interpreter; a thread
  waiting for it runs now;
- if the probe overran (someone else held the interpreter: there is
  contention), sleeps again ``give_ratio`` (2) times as long as the loader
  had worked, so request threads get about two thirds of the interpreter
  until the load ends (a contended load takes longer; an uncontended one
  does not: it never sees an overrun probe).

Without contention a load pays one short sleep per slice (5-7% of a 200,000-row
load here). Probing only after contention shows was tried and is worse for
requests: ``sleep(0)`` hands the interpreter over only to a thread that has
already waited a whole switch interval, so it mostly never sees contention,
and a "stolen time" test (wall minus ``thread_time``) misses the short bursts
of an event loop; p99 of requests during a refresh went from 1.6-2.1x to
2.3-3.8x of steady.

Guarantees: a ``Pacer`` belongs to one load on one thread; it holds no lock
and touches no shared state, so pausing can never block another thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["PIECE_ROWS", "Pacer", "Pause", "no_pause", "pieces"]

Pause = Callable[[], None]
"""A yield point called between bounded pieces of a long load."""

PIECE_ROWS = 2048
"""Rows handled between two pauses of a build."""


def no_pause() -> None:
    """A yield point that never yields (the default of the table builders)."""


def pieces(values: Sequence[Any], pause: Pause) -> Iterator[tuple[int, Sequence[Any]]]:
    """``(start, values[start:start + PIECE_ROWS])`` for the whole column, pausing before each."""
    for start in range(0, len(values), PIECE_ROWS):
        pause()
        yield start, values[start : start + PIECE_ROWS]


class Pacer:
    """A yield point for one load (see module docs); call it between pieces of work.

    >>> pace = Pacer()
    >>> for _ in range(3):
    ...     pace()
    """

    __slots__ = (
        "_clock",
        "_contended",
        "_give",
        "_max_give",
        "_probe",
        "_resumed",
        "_sleep",
        "_slice",
    )

    def __init__(
        self,
        slice_seconds: float = 0.001,
        probe_seconds: float = 0.00005,
        contended_seconds: float = 0.0005,
        max_give_seconds: float = 0.01,
        give_ratio: float = 2.0,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._slice = slice_seconds
        self._probe = probe_seconds
        self._contended = probe_seconds + contended_seconds
        self._max_give = max_give_seconds
        self._give = give_ratio
        self._clock = clock
        self._sleep = sleep
        self._resumed = clock()

    def __call__(self) -> None:
        now = self._clock()
        busy = now - self._resumed
        if busy < self._slice:
            return
        self._sleep(self._probe)
        if self._clock() - now > self._contended:
            self._sleep(min(busy * self._give, self._max_give))
        self._resumed = self._clock()
