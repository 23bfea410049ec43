"""A pool of Lua states of one operator, so that requests on many threads never share one.

lupa runtimes are not thread-safe, and a state holds per-request globals
while a request runs. The pool lends each state to one caller at a time;
it creates a new state when none is idle (compiling the script then: a
state is built once and reused for many requests) and keeps at most
``max_idle`` idle states.

Memory: at most ``max_states`` states exist at once (lent, idle or being
built), each capped by its own ``max_memory``, so an operator's Lua memory
never exceeds ``max_states * max_memory``. A borrower finding all of them
lent waits for one until its deadline, or at most ``max_wait`` seconds when
it has none (so a caller without a deadline cannot wait forever behind
states lent to requests stuck elsewhere). A state that hit its memory limit or
its deadline is discarded: closed, and the freed heap handed back to the
operating system (``malloc_trim``), so the process's RSS comes back down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..._errors import DeadlineExceededError
from ..._heap_trim import trim_heap
from ._errors import LuaRuntimeError
from ._state import LuaState

__all__ = ["DEFAULT_MAX_IDLE", "DEFAULT_MAX_STATES", "DEFAULT_MAX_WAIT", "LuaStatePool"]

DEFAULT_MAX_IDLE = 32
DEFAULT_MAX_STATES = 8
DEFAULT_MAX_WAIT = 1.0
"""Seconds ``borrow`` waits for a free state when the caller gives no deadline: the
server's default request deadline and ``transform_by_lua``'s default ``timeout_ms``, so
a caller without a deadline waits no longer than one with the defaults would."""


class LuaStatePool:
    """Lends :class:`LuaState` objects, one borrower at a time per state.

    Guarantees (all under ``_lock``, held only for list and counter updates
    and condition waits, never while a state is built, runs or is closed):

    - A state is in ``_idle`` or lent to exactly one borrower, never both:
      ``borrow`` pops it under the lock, ``give_back`` appends it under the
      lock, and a borrower gives back only what it borrowed.
    - ``_live`` counts states idle, lent or being built; it is raised before
      a state is built and lowered when one is dropped or fails to build, so
      it never exceeds ``max_states`` (a borrower waits on ``_freed`` while
      it is at the cap, until its deadline or for at most ``max_wait``) and
      ``max_states * max_memory`` bounds the pool's Lua memory.
    - A ``broken`` state (deadline or memory limit hit) is never kept idle:
      ``give_back`` discards it.
    - After ``close``, ``borrow`` raises and returned states are dropped, so
      no state is lent after the pool is closed; states lent before finish
      their request normally and are then dropped.
    - ``active`` is the number of states lent and not yet given back or
      discarded; ``borrows == reuses + creates`` + failed creations.
    """

    def __init__(
        self,
        factory: Callable[[], LuaState],
        max_idle: int = DEFAULT_MAX_IDLE,
        max_states: int = DEFAULT_MAX_STATES,
        operator: str = "",
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        if max_wait < 0:
            raise ValueError(f"max_wait must be >= 0 seconds, got {max_wait}")
        self._factory = factory
        self._max_idle = max_idle
        self._max_states = max_states
        self._max_wait = max_wait
        self._operator = operator
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._idle: list[LuaState] = []
        self._closed = False
        self._live = 0
        self.borrows = 0
        self.returns = 0
        self.creates = 0
        self.reuses = 0
        self.discards = 0
        self.active = 0

    def prime(self) -> None:
        """Build one state now (so that a bad script fails at config time) and keep it idle."""
        with self._lock:
            self._live += 1
        try:
            state = self._factory()
        except BaseException:
            self._drop_slot()
            raise
        with self._lock:
            self.creates += 1
            if not self._closed:
                self._idle.append(state)
                return
        self._drop(state)

    def borrow(self, deadline: float | None = None) -> LuaState:
        """A state for the caller's exclusive use until ``give_back`` or ``discard``.

        Waits (until ``deadline``, ``time.monotonic`` seconds, or for at
        most ``max_wait`` seconds when it is None) while ``max_states``
        states are lent; past it raises :class:`DeadlineExceededError`
        naming the operator.
        """
        if deadline is None:
            deadline = time.monotonic() + self._max_wait
        with self._lock:
            # Bounded: each wait ends by the deadline (or when a state is freed).
            while True:
                if self._closed:
                    raise LuaRuntimeError("lua: pool is closed")
                if self._idle:
                    self.borrows += 1
                    self.active += 1
                    self.reuses += 1
                    return self._idle.pop()
                if self._live < self._max_states:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    op = self._operator
                    raise DeadlineExceededError(
                        f'deadline exceeded in operator "{op}" '
                        f"(all {self._max_states} Lua states busy)",
                        operator=op,
                    )
                self._freed.wait(left)
            self.borrows += 1
            self.active += 1
            self._live += 1
        try:
            state = self._factory()
        except BaseException:
            with self._lock:
                self.active -= 1
            self._drop_slot()
            raise
        with self._lock:
            self.creates += 1
        return state

    def give_back(self, state: LuaState) -> None:
        """Return a borrowed state; kept idle unless broken, or the pool is closed or full."""
        if state.broken:
            self.discard(state)
            return
        with self._lock:
            self.returns += 1
            self.active -= 1
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(state)
                self._freed.notify()
                return
        self._drop(state)

    def discard(self, state: LuaState) -> None:
        """Drop a borrowed state that must not be reused (closed, its memory trimmed)."""
        with self._lock:
            self.active -= 1
            self.discards += 1
        self._drop(state)
        trim_heap()

    def close(self) -> None:
        """Stop lending states and drop the idle ones. Idempotent."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._freed.notify_all()
        for state in idle:
            self._drop(state)

    def _drop(self, state: LuaState) -> None:
        state.close()
        self._drop_slot()

    def _drop_slot(self) -> None:
        with self._lock:
            self._live -= 1
            self._freed.notify()

    @property
    def idle(self) -> int:
        """The number of idle states."""
        with self._lock:
            return len(self._idle)

    def stats(self) -> dict[str, int]:
        """Counters, as the Go engine's pool reports them (plus ``discard_count``)."""
        with self._lock:
            return {
                "borrow_count": self.borrows,
                "return_count": self.returns,
                "create_count": self.creates,
                "reuse_count": self.reuses,
                "discard_count": self.discards,
                "active_count": self.active,
                "idle_count": len(self._idle),
            }
