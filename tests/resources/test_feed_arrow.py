"""``feed_data`` with ``loader: "arrow"`` against the machine's MariaDB.

The Arrow loader (``resources/_feed_arrow.py``) must serve what the
``process`` loader serves: the same values, index keys and bitmaps, sort
ranks and NULL ranks, for every column type the table below holds. It keeps
the other loaders' bounds (a cancel and the load timeout kill the query on
the server; the password is never in an error) and its value's files go
away when the table closes.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import NOT_MODIFIED
from resources import SourceError
from resources.lowlevel import FEED_CODEC

from .._mariadb import Conn, reader_account, running
from ._mysql_types import COLUMNS, create_types_table, expected_rows

pytestmark = pytest.mark.mysql

SECRET = "pw-Arrow-Secret-51"
WAIT = 10.0


@pytest.fixture
def arrow_user(mysql_conn: Conn, mysql_params: dict[str, Any]) -> Iterator[str]:
    with reader_account(mysql_conn, mysql_params["database"], SECRET, "arw") as user:
        yield user


@pytest.fixture
def dsn(mysql_params: dict[str, Any], arrow_user: str) -> str:
    p = mysql_params
    return f"{arrow_user}:{SECRET}@tcp({p['host']}:{p['port']})/{p['database']}"


@pytest.fixture
def typed_table(mysql_conn: Conn, mysql_table: str) -> str:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, category VARCHAR(16), "
            "tag_ids VARCHAR(64), score DECIMAL(8,4), ratio DOUBLE, n INT, "
            "day DATE, at DATETIME, raw VARBINARY(8), flag TINYINT)"
        )
        rows = [
            (
                1,
                "news",
                "[10, 20]",
                "0.5000",
                0.25,
                7,
                "2026-01-02",
                "2026-01-02 03:04:05",
                b"\x00\xff",
                1,
            ),
            (2, "sport", "20,30", "0.9000", None, -3, None, "2026-02-03 04:05:06", None, 0),
            (3, "news", "[30]", "0.7001", 1.5, None, "2025-12-31", None, b"ab", None),
            (4, None, None, None, 2.0, 7, "2026-01-02", "2026-01-02 03:04:05", b"", 1),
        ]
        rows += [
            (i, ("tech", "film", None)[i % 3], f"[{i % 5}, {i % 7 + 50}]", f"{(i % 97) / 97:.4f}",
             i / 3, i % 11, "2026-03-04", "2026-03-04 05:06:07", b"x", i % 2)
            for i in range(5, 400)
        ]  # fmt: skip
        cur.executemany(
            f"INSERT INTO `{mysql_table}` VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows
        )
    return mysql_table


def _params(dsn: str, table: str, loader: str, **extra: Any) -> dict[str, Any]:
    return {
        "mysql_dsn": dsn,
        "table": table,
        "index_columns": ["category", "tag_ids", "n", "flag"],
        "order_columns": ["score", "category", "ratio"],
        "version_query": f"SELECT COUNT(*) FROM `{table}`",
        "loader": loader,
        "connect_timeout_ms": 2000,
        **extra,
    }


def test_serves_what_the_process_loader_serves(dsn: str, typed_table: str) -> None:
    arrow = resources.FeedDataFetcher(_params(dsn, typed_table, "arrow"))
    process = resources.FeedDataFetcher(_params(dsn, typed_table, "process"))
    try:
        got, want = arrow(), process()
        assert isinstance(got, resources.MappedFeedTable)
        assert isinstance(want, resources.FeedTable)
        assert got.columns == want.columns and len(got) == len(want) == 399
        for column in want.columns:
            assert list(got.column(column)) == list(want.column(column)), column
        assert got.index_sizes() == want.index_sizes()
        for column in want.index_columns:
            assert dict(got.index_items(column)) == dict(want.index_items(column)), column
        built = {key: list(rank) for key, rank in want.prepared_ranks().items()}
        assert {key: list(rank) for key, rank in got.prepared_ranks().items()} == built
        assert got.null_ranks() == want.null_ranks()
        assert got.version == want.version == (399,)
        match = {"category": "news", "tag_ids": 30}
        assert got.match(match, order_by="score", descending=True) == want.match(
            match, order_by="score", descending=True
        )
        # NOT_MODIFIED as any loader: the version query's answer did not change
        assert arrow() is NOT_MODIFIED
        got.close()
        want.close()
    finally:
        arrow.close()
        process.close()


def test_its_files_are_linked_when_published_and_removed_when_it_closes(
    dsn: str, typed_table: str, tmp_path: Path
) -> None:
    fetcher = resources.FeedDataFetcher(_params(dsn, typed_table, "arrow"))
    try:
        table = fetcher()
        assert isinstance(table, resources.MappedFeedTable)
        own = table.path
        files = FEED_CODEC.write(table, tmp_path / "snap")
        assert files[0].stat().st_ino == own.stat().st_ino  # linked, not copied
        copy = FEED_CODEC.open(tmp_path / "snap", 1)
        assert list(copy.column("id")) == list(table.column("id"))
        copy.close()
        table.close()
        assert not own.exists() and not own.parent.exists()
        assert all(f.exists() for f in files)  # the published snapshot stays
    finally:
        fetcher.close()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sqlite_path": "x.db", "mysql_dsn": None}, "'arrow' reads MySQL"),
        ({"mysql_dsn": "u:p@unix(/run/mysqld.sock)/test"}, "connects over TCP"),
        ({"loader": "rust"}, "must be 'process', 'thread' or 'arrow'"),
    ],
)
def test_bad_params_are_refused(params: dict[str, Any], message: str) -> None:
    base = {"mysql_dsn": "u:p@tcp(127.0.0.1:3306)/test", "loader": "arrow", "table": "t"}
    with pytest.raises(ConfigError, match=message):
        resources.FeedDataFetcher({**base, **params})


def test_a_missing_column_is_named(dsn: str, typed_table: str) -> None:
    fetcher = resources.FeedDataFetcher(
        {**_params(dsn, typed_table, "arrow"), "index_columns": ["nope"]}
    )
    try:
        with pytest.raises(ConfigError, match=r"parameter 'index_columns': unknown column\(s\)"):
            fetcher()
    finally:
        fetcher.close()


def test_a_wrong_password_is_named_without_it(
    mysql_params: dict[str, Any], arrow_user: str
) -> None:
    p = mysql_params
    bad = f"{arrow_user}:{SECRET}x@tcp({p['host']}:{p['port']})/{p['database']}"
    fetcher = resources.FeedDataFetcher(
        {"mysql_dsn": bad, "query": "SELECT 1 AS id", "loader": "arrow"}
    )
    try:
        began = time.monotonic()
        with pytest.raises(SourceError) as info:
            fetcher()
        # Named at once, not after connectorx's pool gave up retrying the login (30 s).
        assert time.monotonic() - began < 15.0
        assert str(info.value).startswith(f"mysql {arrow_user}@127.0.0.1:")
        assert "Access denied" in str(info.value), info.value
        assert SECRET not in str(info.value)
    finally:
        fetcher.close()


def _until(what: str, done: Any) -> None:
    end = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < end, f"not within {WAIT}s: {what}"
        time.sleep(0.02)


@pytest.mark.timeout(60)
def test_a_cancel_kills_the_running_query(mysql_conn: Conn, dsn: str) -> None:
    marker = f"arw_{uuid.uuid4().hex[:12]}"
    fetcher = resources.FeedDataFetcher(
        {
            "mysql_dsn": dsn,
            "query": f"SELECT /* {marker} */ 1 AS id, SLEEP(60) AS s",
            "loader": "arrow",
        }
    )
    errors: list[str] = []

    def run() -> None:
        try:
            fetcher()
        except SourceError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _until("the query runs", lambda: running(mysql_conn, marker) >= 1)
        fetcher.cancel()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert len(errors) == 1 and errors[0].endswith(": load cancelled (stopping)"), errors
        _until("no query left", lambda: running(mysql_conn, marker) == 0)
    finally:
        fetcher.cancel()
        thread.join(WAIT)
        fetcher.close()


@pytest.mark.timeout(60)
def test_the_load_timeout_kills_the_query(mysql_conn: Conn, dsn: str) -> None:
    marker = f"arw_{uuid.uuid4().hex[:12]}"
    fetcher = resources.FeedDataFetcher(
        {
            "mysql_dsn": dsn,
            "query": f"SELECT /* {marker} */ 1 AS id, SLEEP(60) AS s",
            "loader": "arrow",
            "load_timeout_ms": 1500,
        }
    )
    try:
        started = time.monotonic()
        with pytest.raises(SourceError) as info:
            fetcher()
        assert time.monotonic() - started < 6.0
        assert str(info.value).endswith(": load timed out after 1.5s (load_timeout_ms)")
        assert SECRET not in str(info.value)
        _until("no query left", lambda: running(mysql_conn, marker) == 0)
    finally:
        fetcher.close()


TEMPORAL = ("DATE", "DATETIME", "DATETIME(6)", "TIMESTAMP NULL DEFAULT NULL")
UNREAD = ("GEOMETRY", "POINT", "TIME", "TIME(3)")
"""Types connectorx cannot read (a load of them fails, naming why)."""


def _served(dsn: str, table: str, columns: list[str], where: str = "") -> list[dict[str, Any]]:
    names = ", ".join(["id", *(f"`{c}`" for c in columns)])
    fetcher = resources.FeedDataFetcher(
        {"mysql_dsn": dsn, "query": f"SELECT {names} FROM `{table}` {where}", "loader": "arrow"}
    )
    try:
        got = fetcher()
        assert isinstance(got, resources.FeedTable)
        rows: list[dict[str, Any]] = got.rows(range(len(got)))
        got.close()
        return rows
    finally:
        fetcher.close()


def test_every_type_it_reads_is_the_json_value_feed_data_defines(
    mysql_conn: Conn, mysql_table: str, dsn: str
) -> None:
    """The every-type table of ``_mysql_types``: each column connectorx reads gives the
    value the other loaders give (``expected_rows``); zero dates and the unread types
    fail the load with connectorx's own words."""
    create_types_table(mysql_conn, mysql_table)
    want = expected_rows(mysql_conn, mysql_table)
    plain = [c[0] for c in COLUMNS if c[1] not in (*TEMPORAL, *UNREAD)]
    assert _served(dsn, mysql_table, plain) == [{k: row[k] for k in ["id", *plain]} for row in want]
    temporal = [c[0] for c in COLUMNS if c[1] in TEMPORAL]
    assert _served(dsn, mysql_table, temporal, "WHERE id <> 2") == [
        {k: row[k] for k in ["id", *temporal]} for row in want if row["id"] != 2
    ]
    for column, why in (("c_date", "0000-00-00"), ("c_geometry", "GEOMETRY"), ("c_time", "838")):
        with pytest.raises(SourceError, match=why):
            _served(dsn, mysql_table, [column])
