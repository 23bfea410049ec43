"""Branch conditions: a Lua expression, the common fields it reads, and the control script.

A condition is a Lua 5.1 expression over common fields, written either bare
(``score > 50``) or with ``{{field}}`` markers (``{{score}} > 50``, the Apple
DSL's spelling); both compile to the same Lua. A bare name counts as a field
unless it is a Lua keyword, a standard Lua global (``math``, ``tostring``...),
a member (``string.len``, ``s:upper``) or a table-constructor key.

The control operator of a branch is a ``transform_by_lua`` common function
that returns ``false`` when its branch is taken and ``true`` otherwise, so the
branch's operators, guarded by ``skip: [field]``, run exactly when it is false.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any, Literal

from ._errors import ValidationError

__all__ = ["BranchKind", "condition_fields", "control_script", "lua_expression"]

BranchKind = Literal["if", "elif", "else"]

MARKER = re.compile(r"\{\{(\w+)\}\}")

# fmt: off
_LUA_KEYWORDS = frozenset(
    {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    }
)
_LUA_GLOBALS = frozenset(
    {
        "_G", "_VERSION", "assert", "bit", "coroutine", "error", "getmetatable", "ipairs", "math",
        "next", "os", "pairs", "pcall", "print", "rawequal", "rawget", "rawlen", "rawset", "select",
        "setmetatable", "string", "table", "tonumber", "tostring", "type", "unpack", "utf8",
        "xpcall",
    }
)
# fmt: on
_OPEN = re.compile(r"(--)?\[(=*)\[")
"""A long bracket's opening (``[[``, ``[==[``), or a long comment's (``--[[``)."""
_CLOSE = re.compile(r"(?=\](=*)\])")
"""Every long-bracket closing (``]]``, ``]==]``), overlapping ones included."""
_STRING_BODY = {
    '"': re.compile(r'(?:\\.|[^"\\\n])*', re.DOTALL),
    "'": re.compile(r"(?:\\.|[^'\\\n])*", re.DOTALL),
}
"""What may follow a string's opening quote up to its closing one (escapes included)."""
_TOKEN = re.compile(
    r"""
      (?P<marker>\{\{\w+\}\})
    | (?P<comment>--[^\n]*)
    | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<name>[A-Za-z_]\w*)
    | (?P<space>\s+)
    | (?P<op>\.\.\.?|==|~=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)
"""The tokens that need no look-ahead past their own text (each regex here is linear)."""
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_FUNCTION = "evaluate"


def lua_expression(condition: str) -> str:
    """The condition as Lua: every ``{{field}}`` marker becomes the bare name."""
    return MARKER.sub(r"\1", condition)


def _tokens(condition: str) -> list[tuple[str, str]]:
    """Lua's tokens of ``condition``, without spaces and comments, in linear time.

    Long brackets and strings are found by hand: a regex that scans ahead
    for their closing (a lazy ``.*?`` up to ``]]``) and fails would scan to
    the end again at every later opening, quadratic on ``[[[[...`` or on a
    quote followed by escaped quotes.
    Here a long bracket is tried only when a closing of its level lies
    ahead (``_CLOSE``, one pass), and a string only when no earlier scan of
    the same quote already ran past its position without a closing quote
    (a later quote inside that scan sees the same characters from there on),
    so each character is scanned a bounded number of times. An unclosed
    long bracket or string is what Lua would reject; it tokenizes as an
    operator character, and the text after it as usual.
    """
    last_close: dict[int, int] = {}
    for close in _CLOSE.finditer(condition):  # bounded: one pass
        last_close[len(close.group(1))] = close.start()
    unclosed = {'"': -1, "'": -1}  # per quote: where a scan without a closing quote ended
    found: list[tuple[str, str]] = []
    pos, end = 0, len(condition)
    while pos < end:  # bounded: every round consumes at least one character
        char = condition[pos]
        if char in "[-":
            opening = _OPEN.match(condition, pos)
            if opening is not None:
                level, body = len(opening.group(2)), opening.end()
                if last_close.get(level, -1) >= body:
                    stop = condition.index("]" + "=" * level + "]", body) + level + 2
                    if opening.group(1) is None:
                        found.append(("long", condition[pos:stop]))
                    pos = stop
                    continue
        elif char in unclosed and pos >= unclosed[char]:
            run = _STRING_BODY[char].match(condition, pos + 1)
            assert run is not None  # the pattern matches the empty string
            if condition.startswith(char, run.end()):
                found.append(("string", condition[pos : run.end() + 1]))
                pos = run.end() + 1
                continue
            unclosed[char] = run.end()
        token = _TOKEN.match(condition, pos)
        assert token is not None  # ``op`` matches any character
        kind = token.lastgroup or "op"  # the outermost group: it closes last
        if kind not in ("space", "comment"):
            found.append((kind, token.group()))
        pos = token.end()
    return found


def condition_fields(condition: str) -> list[str]:
    """The common fields ``condition`` reads, in first-use order (markers and bare names)."""
    tokens = _tokens(condition)
    fields: list[str] = []
    for i, (kind, text) in enumerate(tokens):
        if kind == "marker":
            name = text[2:-2]
        elif kind == "name":
            before = tokens[i - 1][1] if i else ""
            after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
            if text in _LUA_KEYWORDS or text in _LUA_GLOBALS or before in (".", ":"):
                continue
            if after == "=" and before in ("{", ","):  # a table-constructor key
                continue
            name = text
        else:
            continue
        if name not in fields:
            fields.append(name)
    return fields


def _lua_ref(field: str) -> str:
    if _IDENTIFIER.match(field) and field not in _LUA_KEYWORDS:
        return field
    escaped = field.replace("\\", "\\\\").replace('"', '\\"')
    return f'_G["{escaped}"]'


def control_script(kind: BranchKind, expression: str | None, prior: Sequence[str]) -> str:
    """The Lua of a branch's control operator (function ``evaluate``).

    ``prior`` are the control fields of the block's earlier branches: each is
    true when its branch was not taken, so a later branch is taken only when
    all of them are true (and its own condition holds).
    """
    tests = [f"({_lua_ref(f)})" for f in prior]
    if kind == "if":
        test = f"({expression})"
    elif kind == "elif":
        test = f"({' and '.join(tests)}) and ({expression})"
    else:
        test = f"({' and '.join(tests)})"
    body = f"if {test} then return false else return true end"
    return f"function {_FUNCTION}() {body} end"


def control_function() -> str:
    """The name of the function every control script defines."""
    return _FUNCTION


def _lua_module() -> Any:
    for name in ("lupa.lua51", "lupa.luajit21"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def check_condition(what: str, condition: object) -> str:
    """``condition`` as a checked Lua expression (markers replaced); raises on a bad one.

    The expression must be a non-empty string that Lua 5.1 compiles as
    ``return (<condition>)``: a statement, an unbalanced parenthesis or a
    stray ``then`` is rejected here, not when the engine loads the config.
    """
    if not isinstance(condition, str) or not condition.strip():
        raise ValidationError(f"{what}: the condition must be a non-empty Lua expression string")
    expression = lua_expression(condition).strip()
    module = _lua_module()
    if module is not None:
        runtime = module.LuaRuntime(register_eval=False, register_builtins=False)
        loaded = runtime.globals().loadstring(f"return ({expression})")
        if isinstance(loaded, tuple):
            message = str(loaded[1]).split("]:", 1)[-1].strip()
            raise ValidationError(
                f"{what}: the condition {condition!r} is not a Lua expression ({message})"
            )
    return expression
