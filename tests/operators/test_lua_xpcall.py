"""Issue 21, item 1: an ``xpcall`` message handler runs under the time guard (real Lua 5.1).

Lua 5.1 calls a message handler where the error is raised; the time guard
raises from inside its count hook, where hooks are off, so a handler called
for the guard's own error ran unguarded. The sandbox's ``xpcall`` calls the
handler afterwards as an ordinary guarded call; these tests check that it
stops at the deadline and that every other result is Lua 5.1's own.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pineapple import DeadlineExceededError
from pineapple.operators._lua import LuaBackend, LuaScriptError, LuaState, available_backends
from pineapple.operators._lua._sandbox import MAX_MEMORY
from pineapple.operators._lua._state import DEFAULT_LOAD_TIMEOUT

pytestmark = pytest.mark.timeout(60)

LUA51 = next((b for b in available_backends() if b.name == "lua51"), None)
needs_lua51 = pytest.mark.skipif(LUA51 is None, reason="lupa has no lua51 module here")


def _lua51() -> LuaBackend:
    assert LUA51 is not None
    return LUA51


# Each chunk returns what a script would see; the raw (unsandboxed) Lua 5.1
# runtime is the oracle.
SAME_AS_LUA51 = [
    "return xpcall(function() return 1, 2, 3 end, function(m) return m end)",
    "return xpcall(function() end, function(m) return m end)",
    "return xpcall(function() error('x') end, function(m) return 'h:' .. m end)",
    "return xpcall(function() error('x', 0) end, function(m) return 'h:' .. m end)",
    "return xpcall(function() error('x', 2) end, function(m) return 'h:' .. m end)",
    "return xpcall(function() error() end, function(m) return type(m) end)",
    "local e = {} return xpcall(function() error(e) end, function(m) return m == e end)",
    "return xpcall(function() local t = {} return t.x.y end, function(m) return 'h:' .. m end)",
    "return xpcall(function() error('x') end, function(m) return 1, 2 end)",
    "return xpcall(function() error('x') end, function(m) end)",
    "return select('#', xpcall(function() error('x') end, function(m) end))",
    "return xpcall(function() error('x') end, function(m) error('y') end)",
    "return xpcall(function() error('x') end, nil)",
    "return xpcall(function() error('x') end, 5)",
    "return xpcall(function() error('x') end, setmetatable({}, {__call = function() end}))",
    "return xpcall(nil, function(m) return 'h:' .. m end)",
    "return xpcall(function(a) return a end, function(m) return m end, 7)",
    # A handler failing on its first call is handed its own error (Lua 5.1's recursion).
    "local n = 0\n"
    "return xpcall(function() error('x') end,\n"
    "  function(m) n = n + 1 if n == 1 then error('again', 0) end return m .. n end)",
    # Nested: inside the body, inside the handler, and pcall around xpcall.
    "return xpcall(function()\n"
    "  local ok, m = xpcall(function() error('in') end, function(m) return 'i:' .. m end)\n"
    "  error(m, 0) end, function(m) return 'o:' .. m end)",
    "return xpcall(function() error('x', 0) end, function(m)\n"
    "  return select(2, xpcall(function() error(m .. '!', 0) end, function(n) return n end)) end)",
    "return pcall(xpcall, function() return 'ok' end, print)",
    # No handler: the argument error (not in a tail call, where ours would carry no position).
    "local ok = xpcall(function() error('x') end) return ok",
    # A handler recursing without end overflows the stack: the same answer.
    "local function h(m) return 1 + h(m) end return xpcall(function() error('x') end, h)",
]


@needs_lua51
@pytest.mark.parametrize("chunk", SAME_AS_LUA51, ids=range(len(SAME_AS_LUA51)))
def test_results_are_lua51s(chunk: str) -> None:
    backend = _lua51()
    raw = backend.module.LuaRuntime()
    sandboxed = backend.new_runtime()

    def outcome(rt: Any) -> Any:
        try:
            return ("returned", rt.execute(chunk))
        except backend.error as exc:
            return ("raised", str(exc).split("\nstack traceback:", 1)[0])

    assert outcome(sandboxed) == outcome(raw)


@needs_lua51
def test_a_memory_error_calls_no_handler_as_in_lua51() -> None:
    backend = _lua51()
    chunk = (
        "local called = false\n"
        "local ok, m = xpcall(function() local t = {} for i = 1, 1e9 do t[i] = {} end end,\n"
        "  function(m) called = true return m end)\n"
        "return ok, m, called"
    )
    raw = backend.module.LuaRuntime(max_memory=8 << 20)
    sandboxed = backend.new_runtime(max_memory=8 << 20)
    assert sandboxed.execute(chunk) == raw.execute(chunk) == (False, "not enough memory", False)


def _state(
    script: str,
    operator: str = "guarded",
    *,
    max_memory: int = MAX_MEMORY,
    load_timeout: float = DEFAULT_LOAD_TIMEOUT,
) -> LuaState:
    """A state of ``script``'s common-mode ``f`` (one output) on Lua 5.1."""
    return LuaState(
        operator=operator,
        script=script,
        function="f",
        item_mode=False,
        common_fields=(),
        item_fields=(),
        outputs=1,
        backend=_lua51(),
        max_memory=max_memory,
        load_timeout=load_timeout,
    )


HANDLERS = {
    # The reproduction: the body fails at once, the handler never returns.
    "handler-loops": "function f() return xpcall(function() error('x') end,"
    " function(m) while true do end end) end",
    # The body is stopped by the guard; its handler (called for that stop) loops.
    "body-and-handler-loop": "function f() return xpcall(function() while true do end end,"
    " function(m) while true do end end) end",
    # Finite but far past the deadline (the 2.2 s answer).
    "handler-slow": "function f() return xpcall(function() error('x') end,"
    " function(m) local x = 0 for i = 1, 1e10 do x = x + i end return x end) end",
    # Retrying in the handler, and swallowing the guard's error in a pcall.
    "handler-retries": "function f() local function h(m) while true do pcall(error, m) end end"
    " return xpcall(function() error('x') end, h) end",
    "handler-tail-calls-itself": "local function h(m) return h(m) end\n"
    "function f() return xpcall(function() error('x') end, h) end",
}


@needs_lua51
@pytest.mark.parametrize("script", list(HANDLERS.values()), ids=list(HANDLERS))
def test_a_handler_is_stopped_at_the_deadline(script: str) -> None:
    state = _state(script)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match='operator "guarded"'):
        state.call_common(0, [], [], started + 0.3)
    took = time.monotonic() - started
    assert took < 3.0  # a 0.3 s deadline; generous for a loaded machine
    assert state.broken


@needs_lua51
def test_a_handler_that_answers_in_time_still_answers() -> None:
    state = _state(
        "function f() local ok, m = xpcall(function() error('x', 0) end,"
        " function(m) return 'handled ' .. m end) return m end"
    )
    assert state.call_common(0, [], [], time.monotonic() + 5.0) == ["handled x"]
    assert not state.broken


# -- issue 21, item 2: the script's top level is guarded too ---------------------------------


TOP_LEVELS = {
    "loops": ("function f() return 1 end\nwhile true do end", "time limit"),
    "loops-in-pcall": (
        "function f() return 1 end\nwhile true do pcall(function() while true do end end) end",
        "time limit",
    ),
    "loops-in-xpcall-handler": (
        "function f() return 1 end\n"
        "xpcall(function() error('x') end, function(m) while true do end end)",
        "time limit",
    ),
    "allocates": (
        "function f() return 1 end\n"
        "local t, mb = {}, string.rep('x', 1024 * 1024)\nfor i = 1, 1e9 do t[i] = mb .. i end",
        "not enough memory",
    ),
}


@needs_lua51
@pytest.mark.parametrize(("script", "needle"), list(TOP_LEVELS.values()), ids=list(TOP_LEVELS))
def test_an_endless_top_level_does_not_load(script: str, needle: str) -> None:
    started = time.monotonic()
    with pytest.raises(LuaScriptError, match='failed to load script of operator "top"') as info:
        _state(script, "top", max_memory=32 << 20, load_timeout=0.3)
    assert time.monotonic() - started < 3.0
    assert needle in str(info.value)


@needs_lua51
def test_a_top_level_that_ends_in_time_loads() -> None:
    script = "local x = 0 for i = 1, 1e5 do x = x + i end\nfunction f() return x end"
    state = _state(script, "top", load_timeout=5.0)
    assert state.call_common(0, [], [], time.monotonic() + 5.0) == [5000050000]
