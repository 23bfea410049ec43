"""Issue 21, item 6: every MariaDB column type loads into ``feed_data``, losslessly.

Bytes (``BINARY``, ``VARBINARY``, every ``BLOB``, ``BIT``, ``GEOMETRY``)
as base64, ``TIME`` as ``[-]HH:MM:SS[.fff]``, zero dates as null after real
dates, one format per column; through both loaders and the mapped form that
``--workers`` serves. (``/execute`` answers: ``tests/server/test_feed_values_served.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeAlias

import pymysql
import pytest

import resources
from resources.lowlevel import open_mapped_table, write_feed_snapshot

from ._mysql_types import COLUMNS, create_types_table, expected_rows

pytestmark = pytest.mark.mysql

Conn: TypeAlias = "pymysql.connections.Connection[Any]"


@pytest.fixture
def types_table(mysql_conn: Conn, mysql_table: str) -> str:
    create_types_table(mysql_conn, mysql_table)
    return mysql_table


def _load(
    dsn: str, table: str, loader: str, index_columns: tuple[str, ...] = ("c_enum",)
) -> resources.FeedTable:
    params: dict[str, object] = {"mysql_dsn": dsn, "table": table, "loader": loader}
    if index_columns:
        params["index_columns"] = list(index_columns)
    fetcher = resources.FeedDataFetcher(params)
    try:
        value = fetcher()
    finally:
        fetcher.close()
    assert isinstance(value, resources.FeedTable)
    return value


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loader", ["process", "thread"])
def test_every_column_type_loads_as_its_json_value(
    mysql_conn: Conn, mysql_dsn: str, types_table: str, loader: str
) -> None:
    table = _load(mysql_dsn, types_table, loader)
    assert list(table.columns) == ["id", *(column[0] for column in COLUMNS)]
    rows = table.match({}, order_by="id")
    expected = expected_rows(mysql_conn, types_table)
    for got, want in zip(rows, expected, strict=True):
        assert got == want
    assert "\ufffd" not in repr(rows)  # nothing was decoded with replacement characters
    assert [r["id"] for r in table.match({"c_enum": "b"})] == [1]


@pytest.mark.timeout(120)
def test_the_mapped_form_gives_the_same_values(
    mysql_conn: Conn, mysql_dsn: str, types_table: str, tmp_path: Path
) -> None:
    table = _load(mysql_dsn, types_table, "process")
    write_feed_snapshot(table, tmp_path / "types")
    mapped = open_mapped_table(tmp_path / "types")
    try:
        assert mapped.match({}, order_by="id") == expected_rows(mysql_conn, types_table)
        assert [r["id"] for r in mapped.match({"c_enum": "a"})] == [2]
    finally:
        mapped.close()


def test_a_zero_date_anywhere_in_a_column_is_null(
    mysql_conn: Conn, mysql_dsn: str, mysql_table: str
) -> None:
    # 5,000 real dates before the zero one: the loader child sends frames of 2,048 rows,
    # so the zero date arrives in a later frame than the first real one.
    with mysql_conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, d DATE, t DATETIME)")
        cur.executemany(
            f"INSERT INTO `{mysql_table}` VALUES (%s, '2026-01-02', '2026-01-02 03:04:05')",
            [(i,) for i in range(5000)],
        )
        cur.execute(f"INSERT INTO `{mysql_table}` VALUES (5000, '0000-00-00', 0)")
    for loader in ("process", "thread"):
        table = _load(mysql_dsn, mysql_table, loader, index_columns=())
        assert table.column("d")[4999] == "2026-01-02"
        assert table.column("t")[4999] == "2026-01-02T03:04:05"
        assert (table.column("d")[5000], table.column("t")[5000]) == (None, None)
