"""A pool of Lua states of one operator, so that requests on many threads never share one.

lupa runtimes are not thread-safe, and a state holds per-request globals
while a request runs. The pool lends each state to one caller at a time;
it creates a new state when none is idle (compiling the script then: a
state is built once and reused for many requests) and keeps at most
``max_idle`` idle states.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ._lua_errors import LuaRuntimeError
from ._lua_state import LuaState

__all__ = ["LuaStatePool"]

DEFAULT_MAX_IDLE = 32


class LuaStatePool:
    """Lends :class:`LuaState` objects, one borrower at a time per state.

    Guarantees (all under ``_lock``, held only for list and counter updates,
    never while a state is built or runs):

    - A state is in ``_idle`` or lent to exactly one borrower, never both:
      ``borrow`` pops it under the lock, ``give_back`` appends it under the
      lock, and a borrower gives back only what it borrowed.
    - After ``close``, ``borrow`` raises and returned states are dropped, so
      no state is lent after the pool is closed; states lent before finish
      their request normally and are then dropped.
    - ``active`` is the number of states lent and not yet given back or
      discarded; ``borrows == reuses + creates`` + failed creations.
    """

    def __init__(self, factory: Callable[[], LuaState], max_idle: int = DEFAULT_MAX_IDLE) -> None:
        self._factory = factory
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: list[LuaState] = []
        self._closed = False
        self.borrows = 0
        self.returns = 0
        self.creates = 0
        self.reuses = 0
        self.active = 0

    def prime(self) -> None:
        """Build one state now (so that a bad script fails at config time) and keep it idle."""
        state = self._factory()
        with self._lock:
            self.creates += 1
            if not self._closed:
                self._idle.append(state)

    def borrow(self) -> LuaState:
        """A state for the caller's exclusive use until ``give_back`` or ``discard``."""
        with self._lock:
            if self._closed:
                raise LuaRuntimeError("lua: pool is closed")
            self.borrows += 1
            self.active += 1
            if self._idle:
                self.reuses += 1
                return self._idle.pop()
        try:
            state = self._factory()
        except BaseException:
            with self._lock:
                self.active -= 1
            raise
        with self._lock:
            self.creates += 1
        return state

    def give_back(self, state: LuaState) -> None:
        """Return a borrowed state; it is kept idle unless the pool is closed or full."""
        with self._lock:
            self.returns += 1
            self.active -= 1
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(state)

    def discard(self, state: LuaState) -> None:
        """Drop a borrowed state that must not be reused."""
        with self._lock:
            self.active -= 1

    def close(self) -> None:
        """Stop lending states and drop the idle ones. Idempotent."""
        with self._lock:
            self._closed = True
            self._idle.clear()

    @property
    def idle(self) -> int:
        """The number of idle states."""
        with self._lock:
            return len(self._idle)

    def stats(self) -> dict[str, int]:
        """Counters, as the Go engine's pool reports them."""
        with self._lock:
            return {
                "borrow_count": self.borrows,
                "return_count": self.returns,
                "create_count": self.creates,
                "reuse_count": self.reuses,
                "active_count": self.active,
                "idle_count": len(self._idle),
            }
