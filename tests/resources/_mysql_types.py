"""A MariaDB table with a column of every type, and the JSON values ``feed_data`` must give.

Row 1 holds ordinary values, row 2 the edges (zero dates after the real
ones of row 1, ``TIME`` at its limits, the largest unsigned ``BIGINT``, all
bits set, empty strings and blobs), row 3 is all NULL. The expected binary
values are not written here: they are the server's own ``HEX()`` of each
cell (for ``BIT(M)``: its number as ``ceil(M/8)`` big-endian bytes, as the
server sends it), base64-encoded (as Go's ``encoding/json`` writes a ``[]byte``).
"""

from __future__ import annotations

import base64
from typing import Any, TypeAlias

import pymysql

__all__ = ["BINARY_COLUMNS", "COLUMNS", "create_types_table", "expected_rows"]

Conn: TypeAlias = "pymysql.connections.Connection[Any]"

# (column, SQL type, row 1 SQL literal, row 1 JSON value, row 2 SQL literal, row 2 JSON value)
# A JSON value of ... means: a binary value, expected from the server's HEX().
COLUMNS: list[tuple[str, str, str, Any, str, Any]] = [
    ("c_tinyint", "TINYINT", "-128", -128, "127", 127),
    ("c_utinyint", "TINYINT UNSIGNED", "0", 0, "255", 255),
    ("c_smallint", "SMALLINT", "-32768", -32768, "32767", 32767),
    ("c_mediumint", "MEDIUMINT", "-8388608", -8388608, "8388607", 8388607),
    ("c_int", "INT", "-2147483648", -2147483648, "2147483647", 2147483647),
    ("c_bigint", "BIGINT", "-9223372036854775808", -(2**63), "9223372036854775807", 2**63 - 1),
    ("c_ubigint", "BIGINT UNSIGNED", "0", 0, "18446744073709551615", 2**64 - 1),
    ("c_bool", "BOOLEAN", "TRUE", 1, "FALSE", 0),
    ("c_decimal", "DECIMAL(10,3)", "'1234567.125'", 1234567.125, "'-0.500'", -0.5),
    ("c_float", "FLOAT", "1.5", 1.5, "-0.25", -0.25),
    ("c_double", "DOUBLE", "0.1", 0.1, "-1e300", -1e300),
    ("c_bit1", "BIT(1)", "b'1'", ..., "b'0'", ...),
    ("c_bit64", "BIT(64)", "b'101'", ..., "~0", ...),
    ("c_date", "DATE", "'2026-11-30'", "2026-11-30", "'0000-00-00'", None),
    (
        "c_datetime",
        "DATETIME",
        "'2026-11-30 08:15:00'",
        "2026-11-30T08:15:00",
        "'0000-00-00 00:00:00'",
        None,
    ),
    (
        "c_datetime6",
        "DATETIME(6)",
        "'2026-11-30 08:15:00.123456'",
        "2026-11-30T08:15:00.123456",
        "'2026-11-30 08:15:00'",
        "2026-11-30T08:15:00.000000",  # one format per column: the declared six digits
    ),
    (
        "c_timestamp",
        "TIMESTAMP NULL DEFAULT NULL",
        "'2026-11-30 08:15:00'",
        "2026-11-30T08:15:00",
        "'0000-00-00 00:00:00'",
        None,
    ),
    ("c_time", "TIME", "'-838:59:59'", "-838:59:59", "'838:59:59'", "838:59:59"),
    ("c_time3", "TIME(3)", "'12:34:56.5'", "12:34:56.500", "'-00:00:01.25'", "-00:00:01.250"),
    ("c_year", "YEAR", "2026", 2026, "0", 0),
    ("c_char", "CHAR(4)", "'ab'", "ab", "''", ""),
    ("c_varchar", "VARCHAR(32)", "'héllo ✓ 😀'", "héllo ✓ 😀", "''", ""),
    ("c_binary", "BINARY(4)", "x'00ff10'", ..., "''", ...),
    ("c_varbinary", "VARBINARY(8)", "x'80616263'", ..., "''", ...),
    ("c_tinyblob", "TINYBLOB", "x'feff'", ..., "x'00'", ...),
    ("c_blob", "BLOB", "x'" + bytes(range(256)).hex() + "'", ..., "''", ...),
    ("c_mediumblob", "MEDIUMBLOB", "REPEAT(x'00c3', 500)", ..., "x'c3'", ...),
    ("c_longblob", "LONGBLOB", "'héllo'", ..., "x'ffd8ffe0'", ...),
    ("c_tinytext", "TINYTEXT", "'tiny ✓'", "tiny ✓", "''", ""),
    ("c_text", "TEXT", "'text 😀'", "text 😀", "''", ""),
    ("c_mediumtext", "MEDIUMTEXT", "REPEAT('ä', 300)", "ä" * 300, "''", ""),
    ("c_longtext", "LONGTEXT", "'long'", "long", "''", ""),
    ("c_enum", "ENUM('a','b')", "'b'", "b", "'a'", "a"),
    ("c_set", "SET('x','y','z')", "'x,z'", "x,z", "''", ""),
    ("c_json", "JSON", """'{"k": [1, 2]}'""", '{"k": [1, 2]}', "'[]'", "[]"),
    ("c_geometry", "GEOMETRY", "ST_GeomFromText('POINT(1 2)')", ..., "POINT(0, 0)", ...),
    ("c_point", "POINT", "POINT(3, 4)", ..., "POINT(-1.5, 2.5)", ...),
    ("c_inet6", "INET6", "'::1'", "::1", "'2001:db8::ff'", "2001:db8::ff"),
    (
        "c_uuid",
        "UUID",
        "'123e4567-e89b-12d3-a456-426614174000'",
        "123e4567-e89b-12d3-a456-426614174000",
        "'00000000-0000-0000-0000-000000000000'",
        "00000000-0000-0000-0000-000000000000",
    ),
    ("c_inet4", "INET4", "'127.0.0.1'", "127.0.0.1", "'0.0.0.0'", "0.0.0.0"),
]

BINARY_COLUMNS = [name for name, _, _, one, _, _ in COLUMNS if one is ...]


def create_types_table(conn: Conn, table: str) -> None:
    """Create ``table`` with every column of ``COLUMNS`` and its three rows."""
    columns = ", ".join(f"`{name}` {sql_type}" for name, sql_type, *_ in COLUMNS)
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # zero dates are allowed, as many tables hold
        cur.execute(f"CREATE TABLE `{table}` (id BIGINT PRIMARY KEY, {columns})")
        for row, index in ((1, 2), (2, 4)):
            values = ", ".join(column[index] for column in COLUMNS)
            cur.execute(f"INSERT INTO `{table}` VALUES ({row}, {values})")
        nulls = ", ".join("NULL" for _ in COLUMNS)
        cur.execute(f"INSERT INTO `{table}` VALUES (3, {nulls})")


_BIT_BYTES = {
    name: (int(sql_type[4:-1]) + 7) // 8
    for name, sql_type, *_ in COLUMNS
    if sql_type.startswith("BIT(")
}


def _raw(name: str, cell: Any) -> bytes:
    if name in _BIT_BYTES:
        return int(cell).to_bytes(_BIT_BYTES[name], "big")
    return bytes.fromhex(cell)


def expected_rows(conn: Conn, table: str) -> list[dict[str, Any]]:
    """The three rows as ``feed_data`` must give them, in id order."""
    cells = ", ".join(
        f"`{name}` + 0" if name in _BIT_BYTES else f"HEX(`{name}`)" for name in BINARY_COLUMNS
    )
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, {cells} FROM `{table}` ORDER BY id")
        binary = {row[0]: dict(zip(BINARY_COLUMNS, row[1:], strict=True)) for row in cur.fetchall()}
    rows: list[dict[str, Any]] = []
    for row, index in ((1, 3), (2, 5)):
        values: dict[str, Any] = {"id": row}
        for column in COLUMNS:
            name, value = column[0], column[index]
            if value is ...:
                value = base64.b64encode(_raw(name, binary[row][name])).decode("ascii")
            values[name] = value
        rows.append(values)
    rows.append({"id": 3, **{column[0]: None for column in COLUMNS}})
    return rows
