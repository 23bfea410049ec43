"""How PostgreSQL values become JSON values, one form per column (``feed_data``).

Shared by the in-process read and the loader child (``_pg_source``), so both
produce the same values from the same rows. psycopg decodes each value by
its column's type OID through ``PG_ADAPTERS`` (psycopg's own loaders for the
numbers, booleans and arrays; the server's text for nearly everything else):

- ``smallint``/``integer``/``bigint``/``oid``: int; ``real``/``double
  precision``: float (PostgreSQL 12+ sends the shortest exact text, so no
  bit is lost; ``NaN`` and ``±Infinity`` stay floats);
- ``numeric(p, s)`` with ``p`` at most 15: float (any decimal of at most 15
  significant digits survives a double exactly, as ``DECIMAL`` does in the
  MySQL path); an unconstrained ``numeric`` or a wider one: its exact decimal
  text (``"12345678901234567890.5"``), never a rounded float; cast it in
  ``query`` (``score::float8``) to order or compare it as a number;
- ``boolean``: true/false;
- text types (``text``, ``varchar``, ``char``, ``name``, ``citext``, enums):
  text as stored;
- ``bytea``: standard base64 with padding (as MySQL's binary columns and
  Go's ``[]byte``);
- ``date``: ``2026-11-30``; ``timestamp``: ``2026-11-30T08:15:00[.ffffff]``
  (the server's digits: trailing zeros of the fraction dropped);
  ``timestamptz``: the same in UTC with ``Z`` (``2026-11-30T08:15:00Z``;
  the session's TimeZone is UTC); ``infinity``/``-infinity`` and BC dates
  as the server writes them; ``time``, ``timetz``, ``interval``
  (ISO 8601, ``P1DT2H``): the server's text;
- ``json``/``jsonb``: the document's text (as MySQL's ``JSON``), so a
  JSON-array cell is indexed per element like any other;
- arrays (any dimension): lists of the elements' values (``int[]`` a list of
  ints, ``text[]`` of texts, NULL elements None), indexed per element;
- ``uuid``, ``inet``, ``cidr``, ``macaddr``, ``money``, ranges, geometric
  types, ``xml``, ``bit``, ``tsvector`` and any other type: the server's text.

The session settings (``SESSION_OPTIONS``) make that text one form whatever
the server's defaults: ``DateStyle=ISO``, ``IntervalStyle=iso_8601``,
``TimeZone=UTC``, ``extra_float_digits=3``.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Loader
from psycopg.postgres import types as builtin_types
from psycopg.types.string import ByteaLoader

__all__ = ["FLOAT_DIGITS", "PG_ADAPTERS", "SESSION_OPTIONS", "float_columns"]

FLOAT_DIGITS = 15
"""The widest ``numeric`` precision loaded as a float (every such decimal survives a double)."""

SESSION_OPTIONS = (
    "-c DateStyle=ISO -c IntervalStyle=iso_8601 -c TimeZone=UTC -c extra_float_digits=3"
)
"""libpq ``options`` of every ``feed_data`` connection (after the DSN's own)."""

_NATIVE = frozenset({"int2", "int4", "int8", "oid", "float4", "float8", "bool"})
"""Types psycopg's own (C) loaders already turn into JSON values."""


class _Text(Loader):
    """The server's text as is."""

    def load(self, data: Any) -> str:
        return bytes(data).decode()


class _Timestamp(Loader):
    """``2026-11-30 08:15:00`` as ``2026-11-30T08:15:00``."""

    def load(self, data: Any) -> str:
        return bytes(data).decode().replace(" ", "T", 1)


class _TimestampUTC(Loader):
    """``2026-11-30 08:15:00+00`` (TimeZone UTC) as ``2026-11-30T08:15:00Z``."""

    def load(self, data: Any) -> str:
        text = bytes(data).decode().replace(" ", "T", 1)
        return text[:-3] + "Z" if text.endswith("+00") else text


class _Base64(Loader):
    """``bytea`` as standard base64 text (psycopg decodes the server's form)."""

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        self._bytea = ByteaLoader(oid, context)

    def load(self, data: Any) -> str:
        return base64.b64encode(self._bytea.load(bytes(data))).decode("ascii")


def _adapters() -> AdaptersMap:
    adapters = AdaptersMap(psycopg.adapters)
    special: dict[str, type[Loader]] = {
        "bytea": _Base64,
        "timestamp": _Timestamp,
        "timestamptz": _TimestampUTC,
    }
    for info in builtin_types:  # bounded: psycopg's list of built-in types
        if info.name not in _NATIVE:
            adapters.register_loader(info.oid, special.get(info.name, _Text))
    return adapters


PG_ADAPTERS = _adapters()
"""The loaders of every ``feed_data`` connection (a copy of psycopg's, text for the rest)."""

_NUMERIC = builtin_types["numeric"].oid


def float_columns(types: Sequence[tuple[int, int]]) -> list[int]:
    """The indexes of the ``numeric(p, s)`` columns with ``p <= FLOAT_DIGITS`` (floats).

    ``types``: each column's type OID and type modifier (``-1``: none), as the
    server describes them; a ``numeric`` modifier is ``((p << 16) | s) + 4``.

    >>> float_columns([(1700, ((6 << 16) | 3) + 4), (1700, -1), (23, -1)])
    [0]
    """
    return [
        i
        for i, (oid, modifier) in enumerate(types)
        if oid == _NUMERIC and modifier >= 4 and ((modifier - 4) >> 16) <= FLOAT_DIGITS
    ]
