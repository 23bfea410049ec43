"""Converting values between Python (JSON-like) and Lua, as the Go engine does.

Python to Lua: ``None`` is nil, ``bool`` a boolean, ``int``/``float`` a
number (a double: ints beyond 2**63 become floats), ``str``/``bytes`` a
string, ``list``/``tuple`` an array table (1-based), ``dict`` a table with
string keys (other keys are turned into strings). Any other object is
passed as its ``str()`` text (Go: ``fmt.Sprint``); no Python object ever
reaches a script.

Lua to Python: nil is ``None``, a boolean ``bool``, a string ``str``, a
number ``int`` when integral and below 2**63 in magnitude (JSON has one
number type and Go prints ``130.0`` as ``130``), else ``float``; negative
zero stays ``-0.0``. A table whose keys ``1..#t`` are all set is a ``list``
of those values (other keys are dropped, as in Go); otherwise every key
must be a string (else :class:`LuaRuntimeError` ``lua: table has
non-string key of type "boolean"``) and it is a ``dict``; the empty table
is ``[]``. Functions and other Lua objects become their ``str()`` text.
"""

from __future__ import annotations

from typing import Any

from ._lua_errors import LuaRuntimeError
from ._lua_sandbox import LuaTable, lua_type_name

__all__ = ["PLAIN_TYPES", "column_to_lua", "from_lua", "to_lua"]

PLAIN_TYPES: frozenset[type] = frozenset({float, int, str, bool, type(None)})
"""Types that lupa converts to a Lua value by itself, and back."""

_MAX_DEPTH = 64


def to_lua(rt: Any, value: Any) -> Any:
    """A value that lupa can hand to Lua without exposing a Python object."""
    if type(value) in PLAIN_TYPES:
        return value
    return _convert_in(rt, value, 0)


def _convert_in(rt: Any, value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in PLAIN_TYPES or kind is bytes:
        return value
    if depth >= _MAX_DEPTH:
        raise LuaRuntimeError("lua: input value nested too deeply (or cyclic)")
    if isinstance(value, dict):
        return rt.table_from({str(k): _convert_in(rt, v, depth + 1) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return rt.table_from([_convert_in(rt, v, depth + 1) for v in value])
    for plain in (bool, int, float, str):  # subclasses (IntEnum, ...) as their base
        if isinstance(value, plain):
            return plain(value)
    return str(value)


def column_to_lua(rt: Any, values: list[Any]) -> Any:
    """A Lua array table of ``values`` (``None`` leaves a hole), built in one call."""
    if set(map(type, values)) <= PLAIN_TYPES:
        return rt.table_from(values)
    return rt.table_from([to_lua(rt, v) for v in values])


def from_lua(value: Any) -> Any:
    """A Python value for one value returned by Lua (tables converted deeply)."""
    if type(value) in PLAIN_TYPES:
        return value
    return _convert_out(value, 0)


def _convert_out(value: Any, depth: int) -> Any:
    if type(value) in PLAIN_TYPES:
        return value
    if type(value) is not LuaTable:
        return str(value)
    if depth >= _MAX_DEPTH:
        raise LuaRuntimeError("lua: returned table nested too deeply (or cyclic)")
    n = len(value)
    if n > 0:
        arr: list[Any] = []
        for i in range(1, n + 1):
            item = value[i]
            if item is None:
                break
            arr.append(_convert_out(item, depth + 1))
        else:
            return arr
    out: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            raise LuaRuntimeError(f'lua: table has non-string key of type "{lua_type_name(key)}"')
        out[key] = _convert_out(item, depth + 1)
    return out if out else []
