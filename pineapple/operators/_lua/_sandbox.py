"""A sandboxed Lua 5.1 runtime (``lupa``), close to the Go engine's gopher-lua sandbox.

The Go engine opens only the base, table, string and math libraries and
removes ``dofile`` and ``loadfile``. Its VMs (gopher-lua, wangshu) implement
Lua 5.1: every number is a double, there is no integer subtype and no ``//``
operator. We run PUC Lua 5.1 (``lupa.lua51``), the same language, because
it is bounded: a count hook stops a script at its deadline (LuaJIT does not
run hooks in JIT-compiled code, so ``while true do end`` never stops there),
and C calls nest at most 200 deep (``LUAI_MAXCCALLS``: ``string.gsub``
recursing through a function replacement is a "C stack overflow" error, where
LuaJIT overflows the C stack and kills the process). LuaJIT 2.1
(``lupa.luajit21``, several times faster per item) is still used where
lupa has no Lua 5.1 build, or when ``PINEAPPLE_LUA_BACKEND=luajit21`` asks
for it: then neither bound holds. What a script sees:

- base library without ``dofile``, ``loadfile``, ``require``, ``module``,
  ``gcinfo``, ``newproxy`` and lupa's ``python`` module (LuaJIT: also no
  ``jit``, ``bit``, and ``ffi`` is unreachable without ``require``); ``load`` and
  ``loadstring`` refuse precompiled (binary) chunks, which C Lua would
  otherwise run unverified; ``collectgarbage`` only answers ``"count"``
  (other options are no-ops, as in gopher-lua, so a script cannot stop the
  collector); ``setfenv`` may not change the environment of the thread or
  of functions up the call stack (only of a function value or of level 1).
- ``string`` (without ``dump``), ``table`` and ``math``; no ``os``, ``io``,
  ``debug``, ``package``, ``coroutine``. Lua 5.1: ``string.find``, ``match``,
  ``gmatch`` and ``gsub`` are bounded (``_patterns``: C only where the worst
  case is small, else a Lua matcher the time guard stops).
- ``pcall`` and ``xpcall`` catch errors as usual, except the time guard's
  (see :class:`SandboxedRuntime`), which they raise again. Lua 5.1: an
  ``xpcall`` message handler runs after the body has failed, under the
  same time guard (5.1 would run it inside the failing call, where a handler
  called for the guard's own error runs with hooks off), with 5.1's results.
- ``tostring`` of a number is formatted as gopher-lua does (Go's ``%v``):
  integral values print as integers (``tostring(1e15)`` is
  ``"1000000000000000"``), others with the shortest round-trip digits
  (``tostring(0.1 + 0.2)`` is ``"0.30000000000000004"``). The ``..``
  operator keeps Lua 5.1's ``%.14g``: the two agree for integers below
  1e14 and for numbers of at most 14 significant digits.

No Python object is ever handed to Lua (values are converted to Lua types
first), and lupa's attribute access is refused for any that slipped through.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

from ._patterns import bound_patterns

__all__ = [
    "HOOK_INSTRUCTIONS",
    "MAX_MEMORY",
    "LuaBackend",
    "SandboxedRuntime",
    "available_backends",
    "default_backend",
]

MAX_MEMORY = 64 * 1024 * 1024
"""Default bytes one runtime may allocate; beyond that a call fails with a memory error."""

SCRIPT_CHUNK = "transform_by_lua"
"""The chunk name of every operator's script, as in the Go engine.

Lua writes it ``[string "transform_by_lua"]`` in error positions
(``[string "transform_by_lua"]:2: shard_failure``), as the public engines do.
"""

MEMORY_MESSAGE = "not enough memory"
"""Lua's message for a failed allocation (after ``guard``, also a plain error's message)."""

HOOK_INSTRUCTIONS = 1000
"""VM instructions between two deadline checks (some 10-100 us of plain Lua work).

Each check calls back into Python (``time.monotonic``) and so takes the GIL;
a larger count keeps a long script from waiting for the GIL often, a
smaller one stops it closer to its deadline.
"""


@dataclass(frozen=True)
class SandboxedRuntime:
    """A sandboxed lupa runtime and the Lua functions of its time guard.

    ``arm(clock, deadline, count)`` makes any Lua code run in ``rt`` raise
    (uncatchably) once ``clock() >= deadline``; ``disarm()`` stops that and
    returns True when the guard fired. ``guard(run, chunk)`` wraps a Lua
    function so that an error leaving it carries the traceback of the frames
    of ``chunk`` (the Go engine's form, see ``SCRIPT_CHUNK``).
    """

    rt: Any
    arm: Any
    disarm: Any
    guard: Any


_PRELUDE = r"""
local G = _G
local type, tonumber, select, error, rawequal = type, tonumber, select, error, rawequal
local byte, fmt, match, rep, sub = string.byte, string.format, string.match, string.rep, string.sub
local floor, huge = math.floor, math.huge
local concat = table.concat
local raw_tostring, raw_loadstring = tostring, loadstring
local raw_collectgarbage, raw_setfenv = collectgarbage, setfenv
local raw_pcall, raw_xpcall, sethook = pcall, xpcall, debug and debug.sethook
local is_jit = G.jit ~= nil
local getinfo = debug and debug.getinfo

for _, name in ipairs({
  "os", "io", "debug", "package", "require", "module", "dofile", "loadfile",
  "python", "gcinfo", "newproxy", "coroutine", "jit", "bit",
}) do
  G[name] = nil
end
string.dump = nil

-- The time guard. ``arm(clock, deadline, count)`` sets a count hook that
-- calls ``clock()`` (Python's time.monotonic) every ``count`` VM instructions
-- and raises KILL once it reaches ``deadline``; ``disarm()`` removes it and
-- says whether it fired. pcall and xpcall re-raise KILL after it fired, so a
-- script cannot catch it and carry on. (LuaJIT: the hook does not fire in
-- compiled code.)
local KILL = "pineapple: lua deadline exceeded"
local killed, clock, deadline = false, nil, 0
local function hook()
  if clock() >= deadline then
    killed = true
    error(KILL, 0)
  end
end
local function arm(c, d, count)
  killed, clock, deadline = false, c, d
  if sethook then sethook(hook, "", count) end
end
local function disarm()
  if sethook then sethook() end
  local fired = killed
  killed, clock = false, nil
  return fired
end
-- string.rep builds up to max_memory bytes in one VM instruction: check first.
local raw_rep = string.rep
string.rep = function(...)
  if clock and clock() >= deadline then
    killed = true
    error(KILL, 0)
  end
  return raw_rep(...)
end
local function rethrow(...)
  if killed then error(KILL, 0) end
  return ...
end
pcall = function(...) return rethrow(raw_pcall(...)) end

-- xpcall. Lua 5.1 runs a message handler where the error is raised, and
-- the time guard raises KILL from inside its hook, where hooks are off: a
-- handler called for KILL would run unguarded (a looping one forever). So
-- the body runs under raw_xpcall with ``capture``, a handler that only
-- keeps the message, and the script's handler is called afterwards, as an
-- ordinary call the hook guards. What a script sees is Lua 5.1's: the
-- handler's first result, "error in error handling" when the handler is no
-- function or keeps failing (5.1 hands a failing handler its own error, up
-- to the C-call limit), no handler call for a memory error, and extra
-- arguments are not passed to the body. What differs: a traceback taken in
-- the handler (scripts have no ``debug`` library), a handler that keeps
-- failing runs from xpcall's depth each time (so a deep one costs more, under
-- the guard), and ``return xpcall(f)`` (no handler, in a tail call) raises
-- its argument error without a position.
local CAUGHT, caught = {}, nil
local function capture(m)
  caught = m
  return CAUGHT
end
local HANDLER_CALLS = 200  -- LUAI_MAXCCALLS: each call is itself time-guarded
local function settle(handler, ok, ...)
  if killed then error(KILL, 0) end
  if ok then return ok, ... end
  local m = ...
  if not rawequal(m, CAUGHT) then return false, m end  -- a memory error: no handler call
  m, caught = caught, nil
  if type(handler) ~= "function" then return false, "error in error handling" end
  for _ = 1, HANDLER_CALLS do
    local fine, r = raw_pcall(handler, m)
    if killed then error(KILL, 0) end
    if fine then return false, r end
    m = r
  end
  return false, "error in error handling"
end
if is_jit then  -- LuaJIT: no hook bound to keep, and its xpcall passes extra arguments on
  xpcall = function(...) return rethrow(raw_xpcall(...)) end
else
  xpcall = function(...)
    if select("#", ...) < 2 then error("bad argument #2 to 'xpcall' (value expected)", 2) end
    local f, handler = ...
    return settle(handler, raw_xpcall(f, capture))
  end
end

local BINARY = "binary chunks are not allowed"

loadstring = function(s, chunkname)
  if type(s) == "string" and byte(s, 1) == 27 then return nil, BINARY end
  return raw_loadstring(s, chunkname)
end

load = function(reader, chunkname)
  if type(reader) == "string" then return loadstring(reader, chunkname) end
  if type(reader) ~= "function" then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ")", 2)
  end
  local parts, n = {}, 0
  while true do
    local piece = reader()
    if piece == nil or piece == "" then break end
    if type(piece) ~= "string" then return nil, "reader function must return a string" end
    n = n + 1
    parts[n] = piece
  end
  return loadstring(concat(parts), chunkname)
end

collectgarbage = function(opt)
  if opt == "count" then return raw_collectgarbage("count") end
  return 0
end

setfenv = function(f, t)
  if type(f) == "number" and f ~= 1 then
    error("setfenv: only a function or level 1 may be given", 2)
  end
  if f == 1 then return raw_setfenv(2, t) end
  return raw_setfenv(f, t)
end

local EFMT = {}
for p = 0, 16 do EFMT[p] = "%." .. p .. "e" end
local TWO63 = 2 ^ 63

local function go_number(n)
  if n ~= n then return "NaN" end
  if n == huge then return "+Inf" end
  if n == -huge then return "-Inf" end
  if n == floor(n) and n >= -TWO63 and n < TWO63 then return fmt("%d", n) end
  local s
  for p = 0, 16 do
    s = fmt(EFMT[p], n)
    if tonumber(s) == n then break end
  end
  local sign, lead, rest, e = match(s, "^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  rest = match(rest, "^(.-)0*$")
  local exp = tonumber(e)
  if exp < -4 or exp >= 6 then
    local mant = lead
    if rest ~= "" then mant = lead .. "." .. rest end
    local esign = "+"
    if exp < 0 then esign = "-"; exp = -exp end
    if exp < 10 then return sign .. mant .. "e" .. esign .. "0" .. exp end
    return sign .. mant .. "e" .. esign .. exp
  end
  local digits = lead .. rest
  if exp < 0 then return sign .. "0." .. rep("0", -exp - 1) .. digits end
  if #digits <= exp + 1 then return sign .. digits .. rep("0", exp + 1 - #digits) end
  return sign .. sub(digits, 1, exp + 1) .. "." .. sub(digits, exp + 2)
end

tostring = function(...)
  local v = ...
  if type(v) == "number" then return go_number(v) end
  return raw_tostring(...)
end

-- What the public Go engine's Lua VM appends to an error that leaves a call
-- uncaught: "stack traceback:", then one line per Lua frame of the script,
-- innermost first, "(...tail calls...)" before a frame entered by a tail
-- call, the outermost "in main chunk" (the function the host called), the
-- others "in function". Frames of other chunks (the driver, our built-ins
-- written in Lua) are host frames there, so they are left out. Bounded: at
-- most MAX_FRAMES levels are read (the 4 KiB cap on error texts applies
-- after). Not for the deadline (KILL) or a memory error, which pass as they are.
local unpack = unpack
local MAX_FRAMES = 200
local MEMORY = "not enough memory"
local function traceback_of(chunk)
  return function(m)
    if m == KILL or m == MEMORY or type(m) ~= "string" or not getinfo then return m end
    local frames, n, after_script = {}, 0, false
    for level = 2, MAX_FRAMES do
      local info = getinfo(level, "Sl")
      if info == nil then break end
      if info.what == "tail" then
        -- Lua 5.1 marks a frame entered by a tail call with a pseudo-frame above it.
        if after_script then frames[n].tail = true end
        after_script = false
      elseif info.source == chunk and info.what ~= "C" then
        n = n + 1
        frames[n] = {src = info.short_src, line = info.currentline}
        after_script = true
      else
        after_script = false
      end
    end
    local out = {m, "\nstack traceback:"}
    for i = 1, n do
      local f = frames[i]
      if f.tail then out[#out + 1] = "\n\t(...tail calls...)" end
      local what = (i == n) and "main chunk" or "function"
      out[#out + 1] = "\n\t" .. f.src .. ":" .. f.line .. ": in " .. what
    end
    return concat(out)
  end
end
-- ``guard(run, chunk)``: ``run`` called under a handler that adds the traceback.
local function guard(run, chunk)
  local handler, args, nargs = traceback_of(chunk), nil, 0
  local function body() return run(unpack(args, 1, nargs)) end
  local function finish(ok, ...)
    args = nil
    if not ok then error((...), 0) end
    return ...
  end
  return function(...)
    args, nargs = {...}, select("#", ...)
    return finish(raw_xpcall(body, handler))
  end
end

return arm, disarm, guard
"""


def _refuse_attribute(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("Python attribute access is not allowed from Lua")


@dataclass(frozen=True)
class LuaBackend:
    """One lupa Lua module (``luajit21`` or ``lua51``) and its types."""

    name: str
    module: Any = field(repr=False)
    table_type: type = field(repr=False)
    """lupa's wrapper type of a Lua table (for fast ``type(v) is ...`` checks)."""

    @property
    def error(self) -> type[Exception]:
        """The module's ``LuaError`` (raised by a failing call or load)."""
        err: type[Exception] = self.module.LuaError
        return err

    def new_runtime(self, max_memory: int = MAX_MEMORY) -> Any:
        """A fresh sandboxed runtime (not thread-safe: one thread at a time).

        Multiple return values come back to Python as a tuple; Python ints too
        large for Lua become floats, as a Go ``float64`` would.
        """
        return self.open(max_memory).rt

    def open(self, max_memory: int = MAX_MEMORY) -> SandboxedRuntime:
        """A fresh sandboxed runtime with its time guard (see :class:`SandboxedRuntime`)."""
        rt = self.module.LuaRuntime(
            unpack_returned_tuples=True,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_refuse_attribute,
            overflow_handler=float,
            max_memory=max_memory,
        )
        if self.name == "lua51":
            bound_patterns(rt)  # before the prelude: it takes the C functions first
        arm, disarm, guard = rt.execute(_PRELUDE, name="=sandbox")
        return SandboxedRuntime(rt, arm, disarm, guard)

    def type_name(self, value: Any) -> str:
        """The Lua type name of a value returned by lupa (``"boolean"``, ``"table"`` ...)."""
        if value is None:
            return "nil"
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, int | float):
            return "number"
        if isinstance(value, str | bytes):
            return "string"
        name = self.module.lua_type(value)
        return str(name) if name is not None else "userdata"


def _probe(name: str) -> LuaBackend | None:
    """Import ``lupa.<name>`` and read its table type once, or None when it is missing."""
    try:
        module = importlib.import_module(f"lupa.{name}")
    except ImportError:
        return None
    return LuaBackend(name, module, type(module.LuaRuntime().table()))


_BACKENDS: tuple[LuaBackend, ...] | None = None
# Guarantees: the one probe of the lupa modules, run on first use without a
# lock: threads racing on it compute equal tuples, so whichever write lands is right.


def available_backends() -> list[LuaBackend]:
    """The lupa Lua 5.1 modules importable here, preferred first (probed once)."""
    global _BACKENDS
    if _BACKENDS is None:
        probed = (_probe(name) for name in ("lua51", "luajit21"))
        _BACKENDS = tuple(b for b in probed if b is not None)
    return list(_BACKENDS)


_DEFAULT: LuaBackend | None = None
# Guarantees: set once on first use, without a lock: threads racing on the
# first call compute the same backend, so whichever write lands is right.


def default_backend() -> LuaBackend:
    """The backend new operators use (``$PINEAPPLE_LUA_BACKEND`` or the first available)."""
    global _DEFAULT
    if _DEFAULT is None:
        backends = available_backends()
        if not backends:
            raise ImportError("lupa has neither a luajit21 nor a lua51 module")
        wanted = os.environ.get("PINEAPPLE_LUA_BACKEND")
        chosen = [b for b in backends if b.name == wanted] if wanted else backends
        if not chosen:
            raise ImportError(f"PINEAPPLE_LUA_BACKEND={wanted!r} is not available")
        _DEFAULT = chosen[0]
    return _DEFAULT
