"""The Lua state pool's wait for a free state: bounded with or without a deadline.

The interleavings are forced: a borrower is known to be waiting because the
pool's condition tells an event so, and a wait that should have been woken
would otherwise run to a cap far above the test's own bound.
"""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import pytest

from pineapple import DeadlineExceededError
from pineapple.engine import build_operator
from pineapple.operators._lua import LuaState, LuaStatePool
from pineapple.operators._lua._pool import DEFAULT_MAX_WAIT
from pineapple.operators.transform_by_lua import DEFAULT_TIMEOUT_MS, TransformByLua

from ._lua_helpers import run

pytestmark = pytest.mark.timeout(60)


class _FakeState:
    """What the pool needs of a state: ``broken`` and ``close``."""

    broken = False

    def close(self) -> None:
        pass


def _pool(max_states: int = 1, **kwargs: Any) -> LuaStatePool:
    return LuaStatePool(
        lambda: cast(LuaState, _FakeState()), max_states=max_states, operator="lua_op", **kwargs
    )


class _TellingCondition(threading.Condition):
    """A condition that sets ``waiting`` each time a thread starts to wait on it."""

    def __init__(self, lock: Any, waiting: threading.Event) -> None:
        super().__init__(lock)
        self.waiting = waiting

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def _tell_waits(pool: LuaStatePool) -> threading.Event:
    waiting = threading.Event()
    pool._freed = _TellingCondition(pool._lock, waiting)
    return waiting


def test_the_default_cap_is_the_operators_default_timeout() -> None:
    assert DEFAULT_MAX_WAIT == DEFAULT_TIMEOUT_MS / 1000


def test_all_states_lent_and_no_deadline_ends_by_the_cap() -> None:
    pool = _pool(max_states=2, max_wait=0.05)
    lent = [pool.borrow(), pool.borrow()]
    waiting = _tell_waits(pool)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r'operator "lua_op".*all 2 Lua states busy'):
        pool.borrow()
    assert time.monotonic() - start >= 0.05
    assert waiting.is_set()  # it did wait, then gave up
    stats = pool.stats()
    assert stats["active_count"] == 2 and stats["borrow_count"] == 2
    for state in lent:
        pool.give_back(state)
    assert pool.stats()["idle_count"] == 2


def test_a_deadline_in_the_past_fails_without_waiting() -> None:
    pool = _pool(max_wait=30)
    pool.borrow()
    waiting = _tell_waits(pool)
    with pytest.raises(DeadlineExceededError, match='operator "lua_op"'):
        pool.borrow(time.monotonic() - 1)
    assert not waiting.is_set()


def test_a_give_back_during_the_wait_wakes_the_borrower() -> None:
    pool = _pool(max_wait=30)  # far beyond the test's own bound: only the wake can end it
    state = pool.borrow()
    waiting = _tell_waits(pool)
    got: list[LuaState] = []
    errors: list[BaseException] = []

    def borrower() -> None:
        try:
            got.append(pool.borrow())
        except BaseException as exc:
            errors.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=borrower)
    thread.start()
    assert waiting.wait(10)
    pool.give_back(state)
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - start < 10
    assert errors == [] and got == [state]
    assert pool.stats()["reuse_count"] == 1


def test_close_during_the_wait_wakes_the_borrower_with_an_error() -> None:
    pool = _pool(max_wait=30)
    pool.borrow()
    waiting = _tell_waits(pool)
    errors: list[BaseException] = []

    def borrower() -> None:
        try:
            pool.borrow()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=borrower)
    thread.start()
    assert waiting.wait(10)
    pool.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(errors) == 1 and "pool is closed" in str(errors[0])


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="max_wait"):
        _pool(max_wait=-1)


def test_the_operator_without_a_request_deadline_waits_at_most_timeout_ms() -> None:
    op, _ = build_operator(
        "transform_by_lua",
        {"lua_script": 'function f() return #"a" end', "function_for_item": "f"}
        | {"max_states": 1, "timeout_ms": 50},
        {"item_output": ["y"]},
        name="lua_op",
    )
    assert isinstance(op, TransformByLua)
    pool = op._pool
    assert pool is not None
    held = pool.borrow()  # the one state, lent to a request stuck elsewhere
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r'operator "lua_op".*all 1 Lua states busy'):
        run(op, {}, [{}])  # a Context without a deadline
    assert time.monotonic() - start >= 0.05
    pool.give_back(held)
    assert run(op, {}, [{}]).item_write_map()[0]["y"] == 1
