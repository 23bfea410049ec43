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

Bounds of what a call returns (a :class:`ResultBudget` per call): its text
(every string, keys included) may hold at most the state's memory cap in
characters, and its tables at most :data:`MAX_RESULT_VALUES` values in all;
each table is walked once (:data:`AUDIT`, in Lua under the call's time guard
and memory cap) before it is converted, and the conversion runs under the
call's deadline. A table that appears twice inside one returned value (a
shared reference) or inside itself (a cycle) is refused, naming where; the
same table returned for several items is converted for each, every copy
counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from ..._error_text import capped, clipped
from ..._errors import DeadlineExceededError
from ...engine._pieces import PIECE, spans
from ._errors import LuaRuntimeError
from ._sandbox import LuaBackend

__all__ = [
    "AUDIT",
    "AUDIT_DEPTH",
    "MAX_RESULT_VALUES",
    "NEG_ZERO_KEYS",
    "OTHER",
    "PACK_CHUNK",
    "PLAIN",
    "PLAIN_TYPES",
    "WITH_NONE",
    "ResultBudget",
    "column_kind",
    "column_to_lua",
    "fetch_column",
    "from_lua",
    "keys_path",
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

MAX_RESULT_VALUES = 1_000_000
"""Values (key-value pairs, all levels) the tables of one call's results may hold in all."""

_TICK = 1024
"""Values converted between two looks at the clock (a few hundred microseconds)."""

AUDIT = r"""
local type, next = type, next
local MAX_DEPTH = ...
return function(col, lo, hi, values, text)
  -- Walks the tables among col[lo..hi], each value of each once: a fresh
  -- ``seen`` per returned value, so a table met twice there is a shared
  -- reference (or, while it is still being walked, a cycle) and the walk
  -- stops. Bounded: ``values`` pairs in all (each copy of a table returned by
  -- several items counts), under the call's time guard and memory cap.
  local seen, trail
  local function walk(t, depth)
    if depth > MAX_DEPTH then trail = {}; return "deep" end
    seen[t] = 1
    local k, v = next(t)
    while k ~= nil do
      values = values - 1
      if type(k) == "string" then text = text - #k end
      local tv = type(v)
      if tv == "string" then
        text = text - #v
      elseif tv == "table" then
        local s = seen[v]
        if s == 1 then trail = {k}; return "cycle" end
        if s == 2 then trail = {k}; return "shared" end
        local why = walk(v, depth + 1)
        if why then trail[#trail + 1] = k; return why end
      end
      if values < 0 then trail = {k}; return "values" end
      if text < 0 then trail = {k}; return "text" end
      k, v = next(t, k)
    end
    seen[t] = 2
    return nil
  end
  for i = lo, hi do
    local v = col[i]
    if type(v) == "table" then
      seen = {}
      local why = walk(v, 1)
      if why then return i, why, trail end
    end
  end
  return nil, values, text
end
"""
"""Lua source of ``(col, lo, hi, values, text) -> nil, values left, text left`` or
``-> index, reason, keys (innermost first)``; compiled once per state (given
:data:`AUDIT_DEPTH`), before the script (so it holds the pristine ``type`` and
``next``)."""

AUDIT_DEPTH = _MAX_DEPTH
"""The deepest a returned table may nest (the chunk argument of :data:`AUDIT`)."""

_REASONS = {
    "cycle": "a table that contains itself (a cycle)",
    "shared": "a table that appears twice in one value (a shared reference)",
    "deep": f"tables nested more than {_MAX_DEPTH} deep",
}


class ResultBudget:
    """What the rest of one call's results may take: characters of text, table values,
    time (``deadline``, ``time.monotonic`` seconds). A plain class (compiled code).

    Not thread-safe: one per call, used by the thread running it.
    """

    def __init__(self, operator: str, text: int, values: int, deadline: float) -> None:
        self.operator = operator
        self.text = text
        self.text_limit = text
        self.values = values
        self.deadline = deadline
        self.ticks = 0

    def over(self, reason: str) -> str:
        """Why a result was refused (``reason``: an :data:`AUDIT` answer)."""
        if reason == "values":
            return f"results hold more than {MAX_RESULT_VALUES:,} table values (one call's bound)"
        if reason == "text":
            return (
                f"results hold more than {self.text_limit:,} characters of text "
                "(one call's bound: max_memory_mb)"
            )
        return f"returned {_REASONS.get(reason, reason)}"

    def tick(self) -> None:
        """One value converted; past the deadline, :class:`DeadlineExceededError`."""
        self.ticks += 1
        if self.ticks % _TICK == 0 and time.monotonic() >= self.deadline:
            op = self.operator
            raise DeadlineExceededError(
                f'deadline exceeded in operator "{op}" (converting Lua results)', operator=op
            )


def fetch_column(
    fetch: Any, table: Any, n: int, longest: int, budget: ResultBudget, field: Callable[[], str]
) -> tuple[list[Any], int]:
    """Values ``1..n`` of the Lua array ``table`` and their :func:`column_kind`, within ``budget``.

    ``fetch(t, i, j)`` returns ``t[i..j]`` (lupa converts the strings); ``longest``
    bounds a string's length (the state's heap). Bounded: each piece holds at
    most ``budget.text // longest`` values (at least one, at most :data:`PIECE`),
    so its text cannot pass the budget by more than one string, and the first
    piece that passes it is refused (:class:`LuaRuntimeError` naming the item and
    the output, ``field()``). The per-value work is :func:`column_kind`'s type test and a
    length added up: one pass, compiled.
    """
    col: list[Any] = []
    kind = PLAIN
    lo = 1
    while lo <= n:
        room = budget.text
        hi = min(n, lo - 1 + max(1, min(PIECE, room // longest)))
        part = fetch(table, lo, hi)
        piece: list[Any] = list(part) if hi > lo else [part]
        for v in piece:
            t = type(v)
            if t is float or t is int or t is bool:
                continue
            if t is str:
                room -= len(v)
                if room < 0:
                    at = lo - 1 + _first_past(piece, budget.text)
                    budget.text = room
                    raise LuaRuntimeError(f"lua: item[{at}]: {field()}: {budget.over('text')}")
            elif v is None:
                if kind == PLAIN:
                    kind = WITH_NONE
            else:
                kind = OTHER
        budget.text = room
        if col:
            col.extend(piece)
        else:
            col = piece
        lo = hi + 1
    return col, kind


def _first_past(piece: list[Any], room: int) -> int:
    """The index of the string of ``piece`` whose text takes ``room`` below zero."""
    for i, v in enumerate(piece):
        if type(v) is str:
            room -= len(v)
            if room < 0:
                return i
    return len(piece) - 1


def keys_path(keys: list[Any]) -> str:
    """``["a"][2]`` for the keys of a path, outermost first (each key and the whole cut:
    they come from the script)."""
    path = "".join(f'["{clipped(k, 64)}"]' if type(k) is str else f"[{k}]" for k in keys)
    return capped(path, 1024)


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


def from_lua(
    value: Any, backend: LuaBackend, budget: ResultBudget, neg_zero_keys: Any = None
) -> Any:
    """A Python value for one value returned by Lua (tables converted deeply).

    Tables must have passed :data:`AUDIT` (no cycle, no shared reference, within
    the budget): the conversion looks at the clock every :data:`_TICK` values
    (``budget.deadline``). ``neg_zero_keys``: the state's compiled
    :data:`NEG_ZERO_KEYS` function; without it a ``-0`` inside a table comes
    back as ``0``.
    """
    if type(value) in PLAIN_TYPES:
        return value
    return _convert_out(value, 0, backend, backend.table_type, budget, neg_zero_keys)


def _convert_out(
    value: Any,
    depth: int,
    backend: LuaBackend,
    table_type: type,
    budget: ResultBudget,
    neg_zero_keys: Any = None,
) -> Any:
    """Gopher-lua's rule: an array when keys ``1..n`` are all set, else a string-keyed map."""
    budget.tick()
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
                arr[key - 1] = _convert_out(
                    item, depth + 1, backend, table_type, budget, neg_zero_keys
                )
        return arr
    out: dict[str, Any] = {}
    for key, item in pairs:
        if type(key) is not str:
            raise LuaRuntimeError(
                f'lua: table has non-string key of type "{backend.type_name(key)}"'
            )
        out[key] = _convert_out(item, depth + 1, backend, table_type, budget, neg_zero_keys)
    return out if out else []
