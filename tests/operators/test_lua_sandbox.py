"""The Lua sandbox: what a script may not reach, and what it keeps."""

from __future__ import annotations

from typing import Any

import pytest

from pineapple import RegistryError
from pineapple.operators._lua import LuaBackend, LuaRuntimeError

from ._lua_helpers import each_backend, lua_op, run

pytestmark = pytest.mark.usefixtures(each_backend.__name__)


def _item_result(body: str, items: list[dict[str, Any]] | None = None) -> Any:
    op = lua_op(f"function f()\n{body}\nend", item="f", item_input=("x",), item_output=("out",))
    try:
        out = run(op, {}, items or [{"x": 1}])
    finally:
        op.close()
    return out.item_write_map()[0]["out"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('return os.execute("echo pwned")', "os"),
        ('return io.open("/etc/passwd", "r")', "io"),
        ('return require("os")', "require"),
        ('return dofile("/etc/passwd")', "dofile"),
        ('return loadfile("/etc/passwd")', "loadfile"),
        ("return debug.getinfo(1)", "debug"),
        ("return package.loaded.os", "package"),
        ('return module("x")', "module"),
        ("return python.eval", "python"),
        ("return string.dump(f)", "dump"),
        ('return getmetatable("").__index.dump(f)', "dump"),
        ("return coroutine.create(f)", "coroutine"),
        ("return newproxy(true)", "newproxy"),
    ],
)
def test_escape_is_refused(body: str, needle: str) -> None:
    with pytest.raises(
        LuaRuntimeError, match=r'lua: item\[0\]: \[string "transform_by_lua"\]:2: attempt to'
    ) as info:
        _item_result(body)
    assert needle in str(info.value)


def test_bytecode_is_refused_by_loadstring_and_load(each_backend: LuaBackend) -> None:
    rt = each_backend.new_runtime()
    # A genuine binary chunk, made by a trusted unsandboxed runtime.
    raw = each_backend.module.LuaRuntime(encoding=None)
    chunk = raw.eval('string.dump(function() return "ran" end)')
    assert isinstance(chunk, bytes | str)
    ok, err = rt.eval("loadstring")(chunk)
    assert ok is None and err == "binary chunks are not allowed"
    ok, err = rt.execute(
        "local s = ...; local done = false\n"
        "return load(function() if done then return nil end; done = true; return s end)",
        chunk,
    )
    assert ok is None and err == "binary chunks are not allowed"
    # Source chunks still load.
    assert rt.eval('loadstring("return 1 + 1")()') == 2


def test_script_given_as_bytecode_is_a_config_error() -> None:
    with pytest.raises(RegistryError, match="binary"):
        lua_op("\x1bLuaQ\x00rest", item="f", item_output=("out",))


def test_collectgarbage_cannot_stop_the_collector() -> None:
    assert _item_result('return collectgarbage("stop")') == 0
    assert isinstance(_item_result('return collectgarbage("count")'), int | float)


def test_setfenv_cannot_touch_the_caller_or_the_thread() -> None:
    with pytest.raises(LuaRuntimeError, match="setfenv"):
        _item_result("setfenv(2, {})")
    with pytest.raises(LuaRuntimeError, match="setfenv"):
        _item_result("setfenv(0, {})")
    # Level 1 and function values are fine.
    assert _item_result("local g = function() return x end; setfenv(g, {x = 7}); return g()") == 7


def test_python_objects_never_reach_lua() -> None:
    class Secret:
        def __str__(self) -> str:
            return "secret-as-text"

    assert _item_result("return type(x) .. ':' .. x", [{"x": Secret()}]) == "string:secret-as-text"


def test_safe_libraries_remain() -> None:
    assert _item_result("return math.floor(3.7)") == 3
    assert _item_result('return string.format("%d-%s", 42, "x")') == "42-x"
    assert _item_result('return table.concat({"a", "b"}, ",")') == "a,b"
    assert _item_result("return select('#', 1, 2, 3)") == 3
    assert _item_result("local ok, e = pcall(error, 'x'); return ok") is False
    assert _item_result('return _G["x"]') == 1
    assert _item_result('return loadstring("return 40 + 2")()') == 42


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("0.1 + 0.2", "0.30000000000000004"),
        ("3.14", "3.14"),
        ("1e15", "1000000000000000"),
        ("2^53", "9007199254740992"),
        ("1234567.5", "1.2345675e+06"),
        ("999999.5", "999999.5"),
        ("0.00001", "1e-05"),
        ("-0.0", "0"),
        ("1/0", "+Inf"),
        ("0/0", "NaN"),
        ('"007"', "007"),
    ],
)
def test_tostring_formats_numbers_as_the_go_engine(expr: str, text: str) -> None:
    assert _item_result(f"return tostring({expr})") == text
