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
zero stays ``-0.0`` (also inside a table: lupa hands a Lua ``-0`` over as
``int`` 0, so a table holding a 0 asks the state's :data:`NEG_ZERO_KEYS`
function which of its keys hold ``-0``). A table whose positive integer keys are exactly
``1..n`` (n > 0) is a ``list`` of those values (other keys are dropped, as
in Go; Lua's ``#`` is not used: its border is ambiguous); otherwise every key
must be a string (else :class:`LuaRuntimeError` ``lua: table has
non-string key of type "boolean"``) and it is a ``dict``; the empty table
is ``[]``. A function (or any other Lua object) has no JSON value: returning
one is a :class:`LuaRuntimeError` (``lua: cannot return a Lua function``).
"""

from __future__ import annotations

from typing import Any, Final

from ...engine._pieces import PIECE, spans
from ._errors import LuaRuntimeError
from ._sandbox import LuaBackend

__all__ = [
    "NEG_ZERO_KEYS",
    "OTHER",
    "PACK_CHUNK",
    "PLAIN",
    "PLAIN_TYPES",
    "WITH_NONE",
    "column_kind",
    "column_to_lua",
    "from_lua",
    "to_lua",
]

PLAIN_TYPES: frozenset[type] = frozenset({float, int, str, bool, type(None)})
"""Types that lupa converts to a Lua value by itself, and back."""

PLAIN: Final = 0
""":func:`column_kind`: every value of a :data:`PLAIN_TYPES` type, none of them ``None``."""
WITH_NONE: Final = 1
""":func:`column_kind`: every value of a :data:`PLAIN_TYPES` type, some ``None``."""
OTHER: Final = 2
""":func:`column_kind`: some value of another type."""

_MAX_DEPTH = 64

NEG_ZERO_KEYS = r"""
local next = next
return function(t)
  -- Bounded by the table's size (itself bounded by the state's memory cap).
  local ks, n = {}, 0
  local k, v = next(t)
  while k ~= nil do
    if v == 0 and 1 / v < 0 then n = n + 1; ks[n] = k end
    k, v = next(t, k)
  end
  return ks
end
"""
"""Lua source of ``(table) -> array of the keys whose value is -0``; compile it
once per state, before the script (so it holds the pristine ``next``)."""

PACK_CHUNK = 7000
"""Values per Python-to-Lua call (Lua 5.1 caps a C call's stack at 8000 slots)."""


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


def column_kind(values: list[Any]) -> int:
    """:data:`PLAIN`, :data:`WITH_NONE` or :data:`OTHER` for a column (exact types, as
    ``type(v) in PLAIN_TYPES``).

    A plain loop (compiled with the engine core: a type test per value, no
    call), piece by piece past :data:`PIECE`; it stops at the first other type.
    """
    n = len(values)
    kind = PLAIN
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for v in values[a:b] if n > PIECE else values:  # compiled: no index per value
            t = type(v)
            if t is float or t is int or t is str or t is bool:
                continue
            if v is None:
                kind = WITH_NONE
            else:
                return OTHER
    return kind


def column_to_lua(rt: Any, values: list[Any], pack: Any) -> Any:
    """A Lua array table of ``values`` (``None`` leaves a hole at its position).

    ``pack`` is the Lua function ``(t, offset, ...) -> t`` of the state: it
    stores its extra arguments at ``offset + 1 ...`` of ``t`` (a new table
    when ``t`` is nil). lupa's ``table_from`` is fast but slow on holes, so
    columns with ``None`` go through ``pack`` (in chunks: a C call takes at
    most 8000 arguments).
    """
    kind = column_kind(values)
    if kind == OTHER:
        values = [to_lua(rt, v) for v in values]
    elif kind == PLAIN:
        return rt.table_from(values)
    n = len(values)
    if n <= PACK_CHUNK:
        return pack(None, 0, *values)
    table = pack(None, 0, *values[:PACK_CHUNK])
    for lo in range(PACK_CHUNK, n, PACK_CHUNK):
        pack(table, lo, *values[lo : lo + PACK_CHUNK])
    return table


def from_lua(value: Any, backend: LuaBackend, neg_zero_keys: Any = None) -> Any:
    """A Python value for one value returned by Lua (tables converted deeply).

    ``neg_zero_keys``: the state's compiled :data:`NEG_ZERO_KEYS` function;
    without it a ``-0`` inside a table comes back as ``0``.
    """
    if type(value) in PLAIN_TYPES:
        return value
    return _convert_out(value, 0, backend, backend.table_type, neg_zero_keys)


def _convert_out(
    value: Any, depth: int, backend: LuaBackend, table_type: type, neg_zero_keys: Any = None
) -> Any:
    """Gopher-lua's rule: an array when keys ``1..n`` are all set, else a string-keyed map."""
    if type(value) in PLAIN_TYPES:
        return value
    if type(value) is not table_type:
        raise LuaRuntimeError(
            f"lua: cannot return a Lua {backend.type_name(value)} (it has no JSON value)"
        )
    if depth >= _MAX_DEPTH:
        raise LuaRuntimeError("lua: returned table nested too deeply (or cyclic)")
    table: Any = value
    pairs: list[tuple[Any, Any]] = list(table.items())
    if neg_zero_keys is not None and any(type(v) is int and v == 0 for _, v in pairs):
        negative = set(neg_zero_keys(table).values())
        pairs = [(k, -0.0 if k in negative else v) for k, v in pairs]
    top = 0
    count = 0
    for key, _ in pairs:
        if type(key) is int and key > 0:
            count += 1
            top = max(top, key)
    if count and count == top:  # keys 1..top all set: an array (other keys dropped)
        arr: list[Any] = [None] * top
        for key, item in pairs:
            if type(key) is int and key > 0:
                arr[key - 1] = _convert_out(item, depth + 1, backend, table_type, neg_zero_keys)
        return arr
    out: dict[str, Any] = {}
    for key, item in pairs:
        if type(key) is not str:
            raise LuaRuntimeError(
                f'lua: table has non-string key of type "{backend.type_name(key)}"'
            )
        out[key] = _convert_out(item, depth + 1, backend, table_type, neg_zero_keys)
    return out if out else []
