"""A PostgreSQL table of every type family ``feed_data`` maps, and the JSON values it must give.

Shared by the resource tests (both loaders, the shared snapshot) and the
server test that serves it over HTTP.
"""

from __future__ import annotations

from typing import Any

from .._postgres import Conn

__all__ = ["COLUMNS", "EXPECTED", "create_types_table"]

COLUMNS: list[tuple[str, str, str, Any]] = [
    # (column, SQL type, SQL literal of row 1, the JSON value feed_data gives)
    ("i2", "smallint", "-32768", -32768),
    ("i8", "bigint", "9223372036854775807", 9223372036854775807),
    ("n_small", "numeric(6,3)", "123.456", 123.456),
    (
        "n_wide",
        "numeric(30,10)",
        "12345678901234567890.0123456789",
        "12345678901234567890.0123456789",
    ),
    ("n_free", "numeric", "0.1000000000000000000001", "0.1000000000000000000001"),
    ("f4", "real", "0.1", 0.1),
    ("f8", "double precision", "0.30000000000000004", 0.30000000000000004),
    ("b", "boolean", "true", True),
    ("t", "text", "'héllo, \"wörld\"'", 'héllo, "wörld"'),
    ("vc", "varchar(8)", "'abc'", "abc"),
    ("ch", "char(4)", "'ab'", "ab  "),
    ("by", "bytea", "'\\x00ff10'::bytea", "AP8Q"),
    ("d", "date", "'2026-11-30'", "2026-11-30"),
    ("ts", "timestamp(6)", "'2026-11-30 08:15:00.123456'", "2026-11-30T08:15:00.123456"),
    ("ts0", "timestamp", "'2026-11-30 08:15:00'", "2026-11-30T08:15:00"),
    ("tz", "timestamptz", "'2026-11-30 08:15:00.5+02'", "2026-11-30T06:15:00.5Z"),
    ("tm", "time", "'23:59:59.25'", "23:59:59.25"),
    ("iv", "interval", "'1 year 2 days 03:04:05'", "P1Y2DT3H4M5S"),
    ("j", "json", "'{\"a\": [1, 2]}'", '{"a": [1, 2]}'),
    ("jb", "jsonb", '\'{"b": [3, 4], "a": 1}\'', '{"a": 1, "b": [3, 4]}'),
    ("ia", "integer[]", "'{10,20,NULL}'", [10, 20, None]),
    ("ta", "text[]", "'{\"x,y\",z}'", ["x,y", "z"]),
    ("m2", "integer[][]", "'{{1,2},{3,4}}'", [[1, 2], [3, 4]]),
    ("da", "date[]", "'{2026-01-02}'", ["2026-01-02"]),
    ("u", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("ip", "inet", "'10.1.2.3/8'", "10.1.2.3/8"),
    ("r", "int4range", "'[1,5)'", "[1,5)"),
]
"""Row 1 holds these; row 2 holds NULL in every column (None)."""

EXPECTED: list[dict[str, Any]] = [
    {"id": 1, **{name: value for name, _, _, value in COLUMNS}},
    {"id": 2, **{name: None for name, _, _, _ in COLUMNS}},
]


def create_types_table(conn: Conn, table: str) -> None:
    """``table`` with an ``id`` and one column per entry of :data:`COLUMNS`, two rows."""
    columns = ", ".join(f"{name} {sql_type}" for name, sql_type, _, _ in COLUMNS)
    conn.execute(f'CREATE TABLE "{table}" (id bigint PRIMARY KEY, {columns})')
    literals = ", ".join(literal for _, _, literal, _ in COLUMNS)
    conn.execute(f'INSERT INTO "{table}" VALUES (1, {literals})')
    conn.execute(f'INSERT INTO "{table}" (id) VALUES (2)')
