"""Bounded Lua patterns: the Lua matcher gives C's results and errors, and stops at the deadline."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from pineapple.operators._lua import available_backends
from pineapple.operators._lua._patterns import bound_patterns

BACKENDS = {b.name: b for b in available_backends()}
pytestmark = pytest.mark.skipif("lua51" not in BACKENDS, reason="lupa has no Lua 5.1 build")

# Runs one call in a Lua function (so errors carry this chunk's line, as from
# a script) and describes its outcome as one string.
HARNESS = r"""
local function show(ok, ...)
  local t = {tostring(ok)}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    t[#t + 1] = type(v) .. ":" .. tostring(v)
  end
  return table.concat(t, "|")
end
local function all(...) return ... end
local REPL = {
  fn = function(c, d)
    if c == "b" then return {} end
    if c == "a" then return nil end
    if c == "1" then return 7 end
    return "<" .. tostring(c) .. tostring(d) .. ">"
  end,
  tbl = setmetatable({a = "A", b = false, ["1"] = 1}, {__index = function(_, k)
    if k == "_" then return true end
  end}),
}
return function(kind, s, p, init, repl, max)
  if kind == "find" then
    return show(pcall(function() return all(string.find(s, p, init)) end))
  elseif kind == "plain" then
    return show(pcall(function() local a, b = string.find(s, p, init, true) return a, b end))
  elseif kind == "match" then
    return show(pcall(function() return all(string.match(s, p, init)) end))
  elseif kind == "method" then
    return show(pcall(function() local a, b, c = s:match(p, init) return a, b, c end))
  elseif kind == "gmatch" then
    return show(pcall(function()
      local out, n = {}, 0
      for a, b in string.gmatch(s, p) do
        n = n + 1
        out[n] = tostring(a) .. "," .. tostring(b)
        if n > 100 then break end
      end
      return table.concat(out, ";")
    end))
  else
    local r = REPL[repl] or repl
    return show(pcall(function() local a, b = string.gsub(s, p, r, max) return a, b end))
  end
end
"""

ATOMS = [
    "a",
    "b",
    "1",
    " ",
    "_",
    ".",
    "%a",
    "%d",
    "%s",
    "%w",
    "%A",
    "%S",
    "%p",
    "%z",
    "%%",
    "%.",
    "[ab]",
    "[^a]",
    "[a-c]",
    "[%d_]",
    "[]]",
    "[^%s]",
    "(",
    ")",
    "()",
    "%1",
    "%2",
    "%bab",
    "%b()",
    "%f[%w]",
    "%f[%W]",
    "^",
    "$",
    "-",
    "*",
]
QUANTIFIERS = ["", "", "", "*", "+", "-", "?"]
BROKEN = ["%", "[a", "%b", "%ba", "%f", "%fa", "%0", "%9", "(()", ")", "[^"]
SUBJECT_CHARS = "ab1 _()\0."


def random_pattern(rng: random.Random) -> str:
    parts = ["^"] if rng.random() < 0.2 else []
    for _ in range(rng.randint(0, 6)):
        atom = rng.choice(ATOMS)
        quantifier = rng.choice(QUANTIFIERS) if atom[0] not in "()^$" else ""
        parts.append(atom + quantifier)
    if rng.random() < 0.15:
        parts.append("$")
    if rng.random() < 0.1:
        parts.insert(rng.randint(0, len(parts)), rng.choice(BROKEN))
    return "".join(parts)


def random_subject(rng: random.Random) -> str:
    return "".join(rng.choice(SUBJECT_CHARS) for _ in range(rng.randint(0, 14)))


def random_call(rng: random.Random) -> tuple[Any, ...]:
    kind = rng.choice(["find", "plain", "match", "method", "gmatch", "gsub"])
    init = rng.choice([None, None, 1, 2, -3, 0, 20, 2.7, "2"])
    repl = rng.choice(["%1-%0", "x", "%2", "%%", "%", "fn", "tbl", "[%1]"])
    max_s = rng.choice([None, None, 1, 0, -1, 2.5])
    return (kind, random_subject(rng), random_pattern(rng), init, repl, max_s)


HAND_PICKED = [
    ("match", " hello  ", "^%s*(.-)%s*$", None, None, None),
    ("match", "key = value", "^(%w+)%s*=%s*(%w+)$", None, None, None),
    ("find", "a\0b", "\0", None, None, None),
    ("find", "a\0%b", "a\0%", None, None, None),
    ("find", "abc", "x%", None, None, None),
    ("find", "xbc", "x%", None, None, None),
    ("find", "abc", "b", 1e300, None, None),
    ("find", "abc", "b", float("nan"), None, None),
    ("find", "abc", "", 10, None, None),
    ("find", "abc", "(", None, None, None),
    ("find", "abc", "(" * 33, None, None, None),
    ("find", "abc", "(" * 32, None, None, None),
    ("find", None, "a", None, None, None),
    ("find", "a", {}, None, None, None),
    ("find", "a", "a", "x", None, None),
    ("method", "a", None, None, None, None),
    ("match", 12345, "%d(%d)", None, None, None),
    ("match", "THE (quick) fox", "%f[%a]%a+", None, None, None),
    ("match", "f(a(b)c)d", "%b()", None, None, None),
    ("match", "abcabc", "(a)(b)(c)%1%2%3", None, None, None),
    ("match", "abab", "()a()%2", None, None, None),
    ("match", "hello", "()ll()", None, None, None),
    ("gmatch", "one two  three", "%a+", None, None, None),
    ("gmatch", "abc", "", None, None, None),
    ("gmatch", "^a^a", "^a", None, None, None),
    ("gmatch", "k1=v1, k2=v2", "(%w+)=(%w+)", None, None, None),
    ("gsub", "hello world", "o", None, "0", None),
    ("gsub", "hello world", "(o)", None, "%1%1", 1),
    ("gsub", "abc", "", None, "-", 2**32 + 1),
    ("gsub", "abc", "b", None, "%", None),
    ("gsub", "abc", "(b", None, "%1", None),
    ("gsub", "abc", "(b", None, "tbl", None),
    ("gsub", "abc", "b", None, "%2", None),
    ("gsub", "abc", "b", None, True, None),
    ("gsub", "abc", "b", None, True, "x"),
    ("gsub", "abc", "%w", None, "fn", None),
    ("gsub", "a_b", "%w", None, "tbl", None),
    ("gsub", "  x  ", "^%s+", None, "", None),
    ("gsub", "hello", "l+", None, "%0%0", None),
]


class Runtimes:
    """Plain lupa Lua 5.1 runtimes: one with C's functions, one with the bounded ones."""

    def __init__(self, budget: int) -> None:
        module = BACKENDS["lua51"].module
        self.c = module.LuaRuntime(unpack_returned_tuples=True)
        self.bounded = module.LuaRuntime(unpack_returned_tuples=True)
        bound_patterns(self.bounded, budget)
        self.c_case = self.c.execute(HARNESS, name="=harness")
        self.bounded_case = self.bounded.execute(HARNESS, name="=harness")

    def compare(self, call: tuple[Any, ...]) -> None:
        def lua_args(rt: Any) -> list[Any]:
            return [rt.table() if isinstance(a, dict) else a for a in call]

        expected = self.c_case(*lua_args(self.c))
        got = self.bounded_case(*lua_args(self.bounded))
        assert got == expected, f"{call!r}: C {expected!r}, bounded {got!r}"


@pytest.fixture(scope="module", params=[0, None], ids=["lua-matcher", "default-budget"])
def runtimes(request: pytest.FixtureRequest) -> Runtimes:
    from pineapple.operators._lua._patterns import BUDGET

    return Runtimes(BUDGET if request.param is None else request.param)


@pytest.mark.parametrize("call", HAND_PICKED, ids=lambda c: f"{c[0]}:{c[2]!r}")
def test_hand_picked_cases_match_c(runtimes: Runtimes, call: tuple[Any, ...]) -> None:
    runtimes.compare(call)


def test_random_patterns_match_c(runtimes: Runtimes) -> None:
    rng = random.Random(20260101)
    for _ in range(4000):  # bounded: 4,000 calls
        runtimes.compare(random_call(rng))


def test_long_patterns_match_c(runtimes: Runtimes) -> None:
    rng = random.Random(7)
    for _ in range(200):
        subject = "".join(rng.choice("ab ") for _ in range(rng.randint(20, 200)))
        atoms = ["a", "b", "%s", ".", "a*", "b-", "[ab]+", "a?"]
        pattern = "".join(rng.choice(atoms) for _ in range(8))
        runtimes.compare(("gsub", subject, pattern, None, "<%0>", None))
        runtimes.compare(("find", subject, pattern, None, None, None))


def _sandboxed() -> Any:
    return BACKENDS["lua51"].open()


def _timed(sandboxed: Any, code: str, seconds: float) -> tuple[Any, bool, float]:
    sandboxed.arm(time.monotonic, time.monotonic() + seconds, 1000)
    started = time.monotonic()
    try:
        result: Any = sandboxed.rt.execute(code)
    except BACKENDS["lua51"].error as exc:
        result = exc
    return result, sandboxed.disarm(), time.monotonic() - started


@pytest.mark.parametrize(
    "code",
    [
        "return string.find(string.rep('a', 30000), '.-.-.-.-.-b')",
        "return string.gsub(string.rep('a', 30000), 'a*a*a*b', '')",
        "for w in string.gmatch(string.rep('a', 30000), '(a-)(a-)(a-)b') do end",
        "return string.match(string.rep('a', 30000), '^(a?)(a?)(a?)(a?)(a?).-.-.-$x')",
        "return string.find(string.rep('a', 3000000), string.rep('a', 100000) .. 'b', 1, true)",
    ],
    ids=["find", "gsub", "gmatch", "match", "plain-find"],
)
def test_pathological_pattern_stops_at_the_deadline(code: str) -> None:
    result, fired, took = _timed(_sandboxed(), code, 0.3)
    assert fired, result
    assert "deadline exceeded" in str(result)
    assert took < 3.0


def test_trim_of_long_strings_stays_fast() -> None:
    sandboxed = _sandboxed()
    for subject in ("string.rep('word ', 2000)", "'x' .. string.rep(' ', 100000) .. 'y'"):
        code = f"return #string.match({subject}, '^%s*(.-)%s*$')"
        # C's matcher needs a minute for the second; the Lua matcher is linear here and
        # ends in milliseconds, so the guard never fires, even on a loaded machine.
        result, fired, _ = _timed(sandboxed, code, 10.0)
        assert not fired and isinstance(result, int), result


def test_luajit_keeps_its_own_functions() -> None:
    if "luajit21" not in BACKENDS:
        pytest.skip("lupa has no LuaJIT build")
    rt = BACKENDS["luajit21"].new_runtime()
    assert "builtin" in rt.eval("tostring(string.find)")
    assert "builtin" not in _sandboxed().rt.eval("tostring(string.find)")
