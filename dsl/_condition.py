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
_TOKEN = re.compile(
    r"""
      (?P<marker>\{\{\w+\}\})
    | (?P<comment>--\[(?P<ceq>=*)\[.*?\](?P=ceq)\]|--[^\n]*)
    | (?P<long>\[(?P<eq>=*)\[.*?\](?P=eq)\])
    | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<name>[A-Za-z_]\w*)
    | (?P<space>\s+)
    | (?P<op>\.\.\.?|==|~=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_FUNCTION = "evaluate"


def lua_expression(condition: str) -> str:
    """The condition as Lua: every ``{{field}}`` marker becomes the bare name."""
    return MARKER.sub(r"\1", condition)


def _tokens(condition: str) -> list[tuple[str, str]]:
    found = []
    for match in _TOKEN.finditer(condition):
        kind = match.lastgroup or "op"  # the outermost group: it closes last
        if kind not in ("space", "comment"):
            found.append((kind, match.group()))
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
