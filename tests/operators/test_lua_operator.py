"""``transform_by_lua`` driven through the operator API: modes, values, errors, threads."""

from __future__ import annotations

import enum
import math
import threading
from typing import Any

import pytest

from pineapple import RegistryError
from pineapple._native import compiled
from pineapple.engine import default_operator_registry
from pineapple.engine._pieces import PIECE
from pineapple.operators._lua import LuaRuntimeError
from pineapple.operators._lua._sandbox import LuaBackend
from pineapple.operators._lua._values import (
    OTHER,
    PLAIN,
    PLAIN_TYPES,
    WITH_NONE,
    column_kind,
)

from ._lua_helpers import each_backend, lua_op, run

pytestmark = pytest.mark.usefixtures(each_backend.__name__)


def _col(out: Any, field: str, n: int) -> list[Any]:
    writes = out.item_write_map()
    return [writes[i][field] for i in range(n)]


# -- registration and config-time errors -------------------------------------


def test_registered_as_a_transform_with_its_params() -> None:
    schema = default_operator_registry().get("transform_by_lua")
    assert schema is not None and schema.kind == "transform"
    assert set(schema.params) == {
        "lua_script",
        "function_for_item",
        "function_for_common",
        "timeout_ms",
        "max_memory_mb",
        "max_states",
    }
    assert schema.blocking  # Lua may run long: a server keeps it off its event loop
    assert schema.params["lua_script"].required


def test_bad_script_fails_at_config_time_naming_the_operator() -> None:
    with pytest.raises(RegistryError) as info:
        lua_op("invalid lua {{{{", item="f", item_output=("y",), name="lua_bad")
    text = str(info.value)
    assert "Init failed" in text
    assert 'failed to load script of operator "lua_bad"' in text
    assert '[string "transform_by_lua"]:1:' in text  # the chunk name Go gives scripts


def test_missing_function_fails_at_config_time() -> None:
    with pytest.raises(
        RegistryError, match=r'function "g" not defined in script of operator "op1"'
    ):
        lua_op("function f() end", item="g", item_output=("y",), name="op1")


def test_script_error_at_load_time_is_a_config_error() -> None:
    with pytest.raises(RegistryError, match="boom at load"):
        lua_op('error("boom at load")\nfunction f() end', item="f", item_output=("y",))


@pytest.mark.parametrize(
    ("item", "common", "message"),
    [
        ("", "", "exactly one of function_for_item or function_for_common must be set"),
        ("f", "f", "cannot set both function_for_item and function_for_common"),
    ],
)
def test_function_choice_is_checked(item: str, common: str, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        lua_op("function f() end", item=item, common=common)


def test_non_string_script_is_refused() -> None:
    from pineapple.engine import build_operator

    with pytest.raises(RegistryError, match="lua_script must be a string"):
        build_operator("transform_by_lua", {"lua_script": 3, "function_for_item": "f"})


# -- item and common mode -----------------------------------------------------


def test_item_mode_sets_common_and_item_globals_per_item() -> None:
    op = lua_op(
        "function f() return x * k, tostring(name) end",
        item="f",
        common_input=("k",),
        item_input=("x", "name"),
        item_output=("y", "label"),
    )
    out = run(op, {"k": 3}, [{"x": 1, "name": "a"}, {"x": 2.5}, {"x": -1, "name": 7}])
    assert _col(out, "y", 3) == [3, 7.5, -3]
    assert _col(out, "label", 3) == ["a", "nil", "7"]  # a missing field is nil, not the last value


def test_missing_return_values_write_nil() -> None:
    op = lua_op("function f() return 1 end", item="f", item_output=("a", "b"))
    out = run(op, {}, [{}, {}])
    assert out.item_write_map() == {0: {"a": 1, "b": None}, 1: {"a": 1, "b": None}}


def test_no_items_means_no_call_and_no_writes() -> None:
    op = lua_op("function f() error('called') end", item="f", item_output=("a",))
    assert not any(run(op, {}, []).used())


def test_common_mode_sees_item_fields_as_arrays_with_holes() -> None:
    op = lua_op(
        "function f() local s = 0; for i = 1, n do s = s + (p[i] or 100) end; return s, #names end",
        common="f",
        common_input=("n",),
        item_input=("p", "names"),
        common_output=("sum", "count"),
    )
    out = run(op, {"n": 3}, [{"p": 1, "names": "a"}, {"names": "b"}, {"p": 2, "names": "c"}])
    assert out.common_writes == {"sum": 103, "count": 3}


def test_common_mode_runs_with_zero_items() -> None:
    op = lua_op(
        "function f() return #xs, 'ok' end",
        common="f",
        item_input=("xs",),
        common_output=("n", "s"),
    )
    assert run(op, {}, []).common_writes == {"n": 0, "s": "ok"}


# -- value mapping --------------------------------------------------------------


def test_numbers_keep_json_identity() -> None:
    op = lua_op(
        'function f() return x * 1.0, x / 4, "42", 42, 2^63, -0.0 end',
        item="f",
        item_input=("x",),
        item_output=("a", "b", "c", "d", "e", "z"),
    )
    row = run(op, {}, [{"x": 10}]).item_write_map()[0]
    assert row["a"] == 10 and type(row["a"]) is int
    assert row["b"] == 2.5 and type(row["b"]) is float
    assert row["c"] == "42" and row["d"] == 42 and type(row["d"]) is int
    assert row["e"] == 2.0**63 and type(row["e"]) is float
    assert row["z"] == 0 and type(row["z"]) is float and math.copysign(1.0, row["z"]) < 0


def test_negative_zero_in_common_mode() -> None:
    # (Lua 5.1 folds 0 and -0.0 literals in one chunk into one constant: negate at run time.)
    op = lua_op("function f() local a = 0; return a, -a end", common="f", common_output=("p", "n"))
    writes = run(op, {}, []).common_writes or {}
    assert math.copysign(1.0, writes["p"]) > 0 and math.copysign(1.0, writes["n"]) < 0


def _signs(values: list[Any]) -> list[float]:
    return [math.copysign(1.0, v) for v in values]


def test_negative_zero_inside_returned_tables_in_both_modes() -> None:
    # Go and C++ keep -0 inside a table as they do for a scalar (issue 13).
    script = "function f() local a = s * 2; return {a, s * 3, 0}, {x = a, y = {a, 1}} end"
    common = lua_op(script, common="f", common_input=("s",), common_output=("arr", "map"))
    writes = run(common, {"s": -0.0}, []).common_writes or {}
    assert _signs(writes["arr"]) == [-1.0, -1.0, 1.0]
    assert _signs([writes["map"]["x"], *writes["map"]["y"]]) == [-1.0, -1.0, 1.0]
    item = lua_op(
        script.replace("s *", "v *").replace("s * 3", "v * 3"),
        item="f",
        item_input=("v",),
        item_output=("arr", "map"),
    )
    rows = run(item, {}, [{"v": -0.0}, {"v": 0}]).item_write_map()
    assert _signs(rows[0]["arr"]) == [-1.0, -1.0, 1.0]
    assert _signs([rows[0]["map"]["x"]]) == [-1.0]
    assert _signs(rows[1]["arr"]) == [1.0, 1.0, 1.0]


def test_big_python_ints_become_lua_numbers() -> None:
    op = lua_op(
        "function f() return x + 0, type(x) end",
        item="f",
        item_input=("x",),
        item_output=("y", "t"),
    )
    row = run(op, {}, [{"x": 2**70}]).item_write_map()[0]
    assert row == {"y": float(2**70), "t": "number"}


def test_nested_values_in_and_out() -> None:
    op = lua_op(
        "function f()\n"
        "  return {id = meta.id, tags = meta.tags, n = #meta.tags, e = {}}, meta.tags\n"
        "end",
        item="f",
        item_input=("meta",),
        item_output=("info", "tags"),
    )
    row = run(op, {}, [{"meta": {"id": "007", "tags": ["a", {"k": [1, 2.5]}]}}]).item_write_map()[0]
    assert row["info"] == {"id": "007", "tags": ["a", {"k": [1, 2.5]}], "n": 2, "e": []}
    assert row["tags"] == ["a", {"k": [1, 2.5]}]


def test_array_with_extra_keys_is_an_array_as_in_go() -> None:
    op = lua_op(
        "function f() local t = {1, 2}; t.x = 3; return t end", item="f", item_output=("y",)
    )
    assert run(op, {}, [{}]).item_write_map()[0]["y"] == [1, 2]


@pytest.mark.parametrize(
    ("table", "kind"),
    [
        ("{[true] = 1}", "boolean"),
        ("{[10] = 1}", "number"),
        ("{1, nil, 3}", "number"),
        ("{[{}] = 1}", "table"),
    ],
)
def test_non_string_keys_are_refused(table: str, kind: str) -> None:
    op = lua_op(f"function f() return {table} end", item="f", item_output=("y",))
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [{}])
    assert str(info.value) == f'lua: item[0]: lua: table has non-string key of type "{kind}"'


def test_non_string_key_in_common_mode() -> None:
    op = lua_op("function f() return {[1.5] = 'x'} end", common="f", common_output=("y",))
    with pytest.raises(LuaRuntimeError, match='non-string key of type "number"'):
        run(op, {}, [])


def test_cyclic_table_is_an_error_not_a_hang() -> None:
    op = lua_op("function f() local t = {}; t.self = t; return t end", item="f", item_output=("y",))
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [{}])
    assert str(info.value) == (
        'lua: item[0]: field "y": returned a table that contains itself (a cycle) at ["self"]'
    )


def test_invalid_utf8_string_is_an_error() -> None:
    op = lua_op(r'function f() return "\255" end', item="f", item_output=("y",))
    with pytest.raises(LuaRuntimeError, match="UTF-8"):
        run(op, {}, [{}, {}])
    op2 = lua_op(r'function f() return "\255" end', common="f", common_output=("y",))
    with pytest.raises(LuaRuntimeError, match="UTF-8"):
        run(op2, {}, [])
    assert run(op, {}, []).item_write_map() == {}  # the states stay usable


# -- runtime errors ---------------------------------------------------------------


def test_runtime_error_names_the_item_and_line() -> None:
    op = lua_op(
        "function f()\n  if x == 2 then error('bad item') end\n  return x\nend",
        item="f",
        item_input=("x",),
        item_output=("y",),
    )
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [{"x": 1}, {"x": 2}, {"x": 3}])
    # The Go engine's chunk name and traceback (one frame: the function it called).
    assert str(info.value) == (
        'lua: item[1]: [string "transform_by_lua"]:2: bad item\n'
        'stack traceback:\n\t[string "transform_by_lua"]:2: in main chunk'
    )
    # The state is reset and reusable after the failure.
    assert _col(run(op, {}, [{"x": 5}]), "y", 1) == [5]


def test_runtime_error_in_common_mode() -> None:
    op = lua_op("function f() return nil + 1 end", common="f", common_output=("y",))
    with pytest.raises(
        LuaRuntimeError,
        match=r'^lua: \[string "transform_by_lua"\]:1: attempt to perform arithmetic',
    ):
        run(op, {}, [])


def test_a_traceback_lists_the_scripts_frames_as_the_go_engine_does(
    each_backend: LuaBackend,
) -> None:
    if each_backend.name == "luajit21":
        pytest.skip("LuaJIT (opt-in) keeps no tail-call frames: the Go format is Lua 5.1's")
    script = (
        "function g(n) if n == 0 then error('deep') end return g(n - 1) end\n"
        "function h() return g(2) end\n"
        "function f()\n  local r = h()\n  return r\nend"
    )
    op = lua_op(script, common="f", common_output=("y",))
    with pytest.raises(LuaRuntimeError) as info:
        run(op, {}, [])
    chunk = '[string "transform_by_lua"]'
    assert str(info.value) == (
        f"lua: {chunk}:1: deep\nstack traceback:\n"
        f"\t(...tail calls...)\n\t{chunk}:1: in function\n"  # g, entered by tail calls
        f"\t{chunk}:4: in main chunk"  # f, which the engine called
    )


def test_an_error_caught_by_pcall_has_no_traceback() -> None:
    op = lua_op(
        "function f() local ok, m = pcall(error, 'x') return m end",
        common="f",
        common_output=("y",),
    )
    assert run(op, {}, []).common_writes == {"y": "x"}


# -- state: compiled once, reset per request ------------------------------------


def test_globals_are_reset_between_requests_and_script_loaded_once() -> None:
    op = lua_op(
        "loads = (loads or 0) + 1\ncounter = 0\n"
        "function f() counter = counter + 1; local seen = leaked; leaked = true\n"
        "  return counter, seen, loads end",
        item="f",
        item_output=("n", "seen", "loads"),
    )
    for _ in range(3):
        out = run(op, {}, [{}, {}])
        assert _col(out, "n", 2) == [1, 2]
        assert _col(out, "seen", 2) == [None, True]
        assert _col(out, "loads", 2) == [1, 1]
    stats = op.stats()
    assert stats["create_count"] == 1 and stats["borrow_count"] == 3
    assert stats["active_count"] == 0 and stats["idle_count"] == 1


def test_script_cannot_break_the_driver_by_redefining_builtins() -> None:
    op = lua_op(
        "function f() next = nil; rawset = nil; unpack = nil; _G = nil; return 1 end",
        item="f",
        item_output=("y",),
    )
    for _ in range(2):
        assert _col(run(op, {}, [{}, {}]), "y", 2) == [1, 1]


@pytest.mark.parametrize("holes", [False, True])
def test_large_request_crosses_the_chunk_size(holes: bool) -> None:
    op = lua_op(
        "function f() return (x or -1) * 2 end", item="f", item_input=("x",), item_output=("y",)
    )
    n = 15001

    def value(i: int) -> int | None:
        return None if holes and i % 3 == 1 else i

    out = run(op, {}, [{"x": value(i)} for i in range(n)])
    col = (out.column_writes or [])[0][1]
    expected = [-2 if value(i) is None else 2 * i for i in range(n)]
    assert col == expected


class _Level(enum.IntEnum):
    HIGH = 2


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([], PLAIN),
        ([1.5, 2, "a", True], PLAIN),
        ([1.5, None, "a"], WITH_NONE),
        ([None, 1.5, [1]], OTHER),  # the first other type decides, whatever came before
        ([_Level.HIGH], OTHER),  # exact types only: a subclass is converted (to_lua)
        ([b"x"], OTHER),
        ([1.0] * (PIECE + 1) + [None], WITH_NONE),  # past a piece
        ([1.0] * (PIECE * 2) + [{}], OTHER),
    ],
)
def test_column_kind_is_the_plain_types_test_of_every_value(values: list[Any], kind: int) -> None:
    assert column_kind(values) == kind
    plain = {type(v) for v in values} <= PLAIN_TYPES
    assert kind == (OTHER if not plain else WITH_NONE if None in values else PLAIN)


def test_many_fields_use_the_looped_driver() -> None:
    fields = tuple(f"f{k}" for k in range(50))
    outs = tuple(f"o{k}" for k in range(45))
    script = (
        "function f() return "
        + ", ".join(f"f{k} + c" for k in range(45))
        + " end\nfunction g() local s = 0; for i = 1, #f0 do s = s + f0[i] + f49[i] end; "
        "local zero = 0; return s, -zero end"
    )
    op = lua_op(script, item="f", common_input=("c",), item_input=fields, item_output=outs)
    items = [{f"f{k}": k * 10 + i for k in range(50)} for i in range(3)]
    writes = run(op, {"c": 1}, items).item_write_map()
    assert writes[2]["o0"] == 3 and writes[1]["o44"] == 442
    op2 = lua_op(script, common="g", item_input=fields, common_output=("s", "z"))
    got = run(op2, {}, items).common_writes or {}
    assert got["s"] == (0 + 1 + 2) + (490 + 491 + 492)
    assert math.copysign(1.0, got["z"]) < 0


# -- threads and life cycle --------------------------------------------------------


class _Gate:
    """An item value whose conversion to Lua waits until both threads are converting."""

    def __init__(self, barrier: threading.Barrier, text: str) -> None:
        self.barrier = barrier
        self.text = text

    def __str__(self) -> str:
        self.barrier.wait()
        return self.text


def test_two_threads_run_the_same_operator_at_once_on_separate_states() -> None:
    op = lua_op(
        "function f()\n"
        "  hits = (hits or 0) + 1; return tag .. ':' .. tostring(x * k) .. ':' .. hits\n"
        "end",
        item="f",
        common_input=("k",),
        item_input=("tag", "x"),
        item_output=("y",),
    )
    barrier = threading.Barrier(2, timeout=10)
    results: dict[str, list[Any]] = {}
    errors: list[BaseException] = []

    def worker(name: str, k: int) -> None:
        try:
            items = [{"tag": _Gate(barrier, name), "x": i} for i in range(1)]
            items += [{"tag": name, "x": i} for i in range(1, 500)]
            out = run(op, {"k": k}, items)
            results[name] = _col(out, "y", 500)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n, k)) for n, k in (("a", 2), ("b", 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results["a"] == [f"a:{2 * i}:{i + 1}" for i in range(500)]
    assert results["b"] == [f"b:{3 * i}:{i + 1}" for i in range(500)]
    stats = op.stats()
    # Both were inside execute at once (the barrier), so each had its own state.
    assert stats["create_count"] == 2 and stats["active_count"] == 0
    assert stats["idle_count"] == 2 and stats["borrow_count"] == 2


@pytest.mark.parametrize(
    ("script", "borrows"),
    [
        ("function f() return x * k + 1 end", 0 if compiled() else 160),  # numbers only
        ('function f() return x * k + #"a" end', 160),  # Lua's inline item loop
        ("function f() return math.floor(x * k) + 1 end", 160),  # Lua's general loop
    ],
)
def test_many_threads_many_requests_agree_with_a_serial_run(script: str, borrows: int) -> None:
    op = lua_op(
        script,
        item="f",
        common_input=("k",),
        item_input=("x",),
        item_output=("y",),
    )
    start = threading.Event()
    bad: list[str] = []

    def worker(k: int) -> None:
        start.wait()
        for r in range(40):
            items = [{"x": i + r} for i in range(50)]
            got = _col(run(op, {"k": k}, items), "y", 50)
            if got != [(i + r) * k + 1 for i in range(50)]:
                bad.append(f"k={k} r={r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join()
    assert bad == []
    stats = op.stats()
    assert stats["borrow_count"] == borrows and stats["return_count"] == borrows
    assert stats["active_count"] == 0 and 1 <= stats["create_count"] <= (4 if borrows else 1)


def test_closed_operator_refuses_to_run() -> None:
    op = lua_op("function f() return 1 end", item="f", item_output=("y",))
    op.close()
    op.close()
    with pytest.raises(LuaRuntimeError, match="pool is closed"):
        run(op, {}, [{}])


def test_memory_is_capped_per_state() -> None:
    op = lua_op(
        'function f() return #string.rep("x", 300 * 1024 * 1024) end',
        item="f",
        item_output=("y",),
    )
    with pytest.raises(LuaRuntimeError, match=r"lua: item\[0\]: not enough memory"):
        run(op, {}, [{}])
    op2 = lua_op('function f() return #string.rep("x", 1024) end', item="f", item_output=("y",))
    assert run(op2, {}, [{}]).item_write_map()[0]["y"] == 1024
