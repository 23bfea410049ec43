"""What a Lua call returns is converted within bounds, against real Lua: a budget of text
and table values per call, the call's deadline, and no shared reference or cycle."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from pineapple import DeadlineExceededError
from pineapple.operators._lua import LuaRuntimeError, LuaState, default_backend
from pineapple.operators._lua._values import MAX_RESULT_VALUES, ResultBudget, from_lua

from ._lua_helpers import lua_op, run

pytestmark = pytest.mark.timeout(60)

NESTED_SHARED = """
function f()
  local t = {1}
  for _ = 1, 40 do t = {t, t} end
  return t
end
"""
"""2^40 leaves if each reference were converted apart (the issue's freeze)."""


@pytest.mark.parametrize("mode", ["item", "common"])
def test_a_table_shared_forty_deep_is_refused_at_once_naming_where(mode: str) -> None:
    if mode == "item":
        op = lua_op(NESTED_SHARED, item="f", item_output=("y",))
        items: list[dict[str, Any]] = [{}]
        at = "item[0]: "
    else:
        op = lua_op(NESTED_SHARED, common="f", common_output=("y",))
        items = []
        at = ""
    started = time.monotonic()
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, items)
    assert time.monotonic() - started < 1.0  # the deadline (1000 ms) was never needed
    assert str(info.value) == (
        f'lua: {at}field "y": returned a table that appears twice in one value '
        f"(a shared reference) at {'[1]' * 39}[2]"
    )


def test_the_shared_reference_is_named_by_its_path() -> None:
    op = lua_op(
        "function f() local s = {1}; return {a = {s}, b = {x = {s}}} end",
        common="f",
        common_output=("out",),
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [])
    message = str(info.value)
    assert message.startswith('lua: field "out": returned a table that appears twice in one value')
    assert message.endswith(('at ["b"]["x"][1]', 'at ["a"][1]'))  # Lua's pair order decides


def test_a_cycle_deep_inside_is_refused_naming_its_path() -> None:
    op = lua_op(
        "function f() local t = {k = {}}; t.k.back = t; return 1, t end",
        item="f",
        item_output=("a", "b"),
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [{}, {}])
    assert str(info.value) == (
        'lua: item[0]: field "b": returned a table that contains itself (a cycle) at ["k"]["back"]'
    )


def test_the_same_table_for_every_item_is_converted_for_each() -> None:
    op = lua_op(
        "local SAME = {tag = 'x', n = {1, 2}}\nfunction f() return SAME end",
        item="f",
        item_output=("y",),
    )
    rows = run(op, {}, [{}] * 3).item_write_map()
    assert [rows[i]["y"] for i in range(3)] == [{"tag": "x", "n": [1, 2]}] * 3
    assert rows[0]["y"] is not rows[1]["y"]


def test_a_huge_string_for_every_item_is_refused_by_the_text_budget() -> None:
    # 12 MiB for each of 40 items: 480 MiB of Python text against a 64 MiB budget.
    op = lua_op(
        'local S = string.rep("x", 12 * 1024 * 1024)\nfunction f() return S end',
        item="f",
        item_output=("y",),
    )
    tracemalloc.start()
    try:
        with pytest.raises(LuaRuntimeError) as info:
            run(op, {}, [{}] * 40)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == (
        'lua: item[5]: field "y": results hold more than 67,108,864 characters of text '
        "(one call's bound: max_memory_mb)"
    )
    assert peak < 100 * 1024 * 1024  # the budget and one string, never the 480 MiB


def test_a_huge_string_inside_tables_is_counted_too() -> None:
    op = lua_op(
        'local S = string.rep("x", 12 * 1024 * 1024)\nfunction f() return {s = S} end',
        item="f",
        item_output=("y",),
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [{}] * 40)
    assert str(info.value).startswith('lua: item[5]: field "y": results hold more than 67,108,864')
    assert str(info.value).endswith('at ["s"]')


def test_text_within_the_budget_passes_whole() -> None:
    op = lua_op(
        'local S = string.rep("x", 1024 * 1024)\nfunction f() return S end',
        item="f",
        item_output=("y",),
    )
    rows = run(op, {}, [{}] * 40).item_write_map()  # 40 MiB: within 64
    assert all(len(rows[i]["y"]) == 1024 * 1024 for i in range(40))


def test_more_table_values_than_the_budget_are_refused() -> None:
    op = lua_op(
        f"function f() local t = {{}}; for i = 1, {MAX_RESULT_VALUES + 1} do t[i] = i end; "
        "return t end",
        common="f",
        common_output=("y",),
        timeout_ms=60_000,  # the bound under test is the count
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [])
    assert str(info.value).startswith(
        'lua: field "y": results hold more than 1,000,000 table values'
    )


def _state(script: str, *, outputs: int = 1) -> LuaState:
    return LuaState(
        operator="lua_op",
        script=script,
        function="f",
        item_mode=False,
        common_fields=(),
        item_fields=(),
        outputs=outputs,
        output_fields=("y",),
    )


def test_the_walk_of_returned_tables_stops_at_the_calls_deadline() -> None:
    state = _state("function f() end")
    table = state._rt.eval(
        "(function() local t = {} for i = 1, 200000 do t[i] = {i} end return {t} end)()"
    )
    budget = ResultBudget("lua_op", 1 << 20, MAX_RESULT_VALUES, time.monotonic() - 1)
    with pytest.raises(DeadlineExceededError, match='operator "lua_op"'):
        state._audit_tables(table, 1, 0, budget)
    assert state.broken


def test_the_conversion_stops_at_the_calls_deadline() -> None:
    backend = default_backend()
    rt = backend.new_runtime()
    table = rt.eval("(function() local t = {} for i = 1, 5000 do t[i] = i end return t end)()")
    past = ResultBudget("lua_op", 1 << 20, MAX_RESULT_VALUES, time.monotonic() - 1)
    with pytest.raises(DeadlineExceededError, match="converting Lua results"):
        from_lua(table, backend, past)
    later = ResultBudget("lua_op", 1 << 20, MAX_RESULT_VALUES, time.monotonic() + 60)
    assert from_lua(table, backend, later) == list(range(1, 5001))


def test_common_mode_text_counts_every_output() -> None:
    outputs = tuple(f"o{k}" for k in range(6))  # 6 x 12 MiB: past 64 MiB at the sixth
    op = lua_op(
        'local S = string.rep("x", 12 * 1024 * 1024)\nfunction f() return S, S, S, S, S, S end',
        common="f",
        common_output=outputs,
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [])
    assert str(info.value) == (
        'lua: field "o5": results hold more than 67,108,864 characters of text '
        "(one call's bound: max_memory_mb)"
    )
