"""feed_data against the machine's PostgreSQL (database ``test``): loads, refreshes, types.

Both loaders (the loader child and the refresh thread) give the same table
of the same JSON values, and the shared snapshot of ``--workers`` keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import Manager, RefreshError, StartError
from resources.lowlevel import FEED_CODEC

from .._postgres import Conn, reader_role
from ._pg_types import EXPECTED, create_types_table

pytestmark = pytest.mark.postgres

SECRET = "pw-Pg-Secret-9141"
LOADERS = ["process", "thread"]


@pytest.fixture
def feed_table(pg_conn: Conn, pg_table: str) -> str:
    pg_conn.execute(
        f'CREATE TABLE "{pg_table}" (id bigint PRIMARY KEY, category text, tag_ids int[], '
        "score numeric(6,3), updated_at bigint NOT NULL)"
    )
    with pg_conn.cursor() as cur:
        cur.executemany(
            f'INSERT INTO "{pg_table}" VALUES (%s, %s, %s, %s, %s)',
            [
                (1, "news", [10, 20], "0.500", 1),
                (2, "sport", [20, 30], "0.900", 1),
                (3, "news", [30], "0.700", 1),
                (4, "tech", None, None, 1),
            ],
        )
    return pg_table


@pytest.fixture
def role(pg_conn: Conn, feed_table: str) -> Iterator[str]:
    with reader_role(pg_conn, feed_table, SECRET, "pgh_reader") as name:
        yield name


@pytest.fixture
def dsn(pg_params: dict[str, Any], role: str) -> str:
    p = pg_params
    return f"postgresql://{role}:{SECRET}@{p['host']}:{p['port']}/{p['dbname']}"


def _params(dsn: str, table: str, loader: str, **extra: Any) -> dict[str, Any]:
    return {
        "dsn": dsn,
        "table": table,
        "loader": loader,
        "index_columns": ["category", "tag_ids"],
        "version_query": f'SELECT MAX(updated_at), COUNT(*) FROM "{table}"',
        "connect_timeout_ms": 2000,
        **extra,
    }


def _manager(params: dict[str, Any]) -> Manager:
    rm = Manager()
    rm.load_from_root_config(
        {"resource_config": {"feed": {"type": "feed_data", "interval": -1, "params": params}}}
    )
    return rm


def _ids(rm: Manager, match: dict[str, Any]) -> list[Any]:
    handle = rm.get("feed")
    assert handle is not None
    with handle as table:
        return [r["id"] for r in table.match(match, order_by="score", descending=True)]


@pytest.mark.parametrize("loader", LOADERS)
def test_loads_recalls_and_refreshes_only_when_the_version_changes(
    pg_conn: Conn, dsn: str, feed_table: str, role: str, loader: str
) -> None:
    rm = _manager(_params(dsn, feed_table, loader))
    rm.start()
    try:
        assert _ids(rm, {"category": "news"}) == [3, 1]
        assert _ids(rm, {"tag_ids": [20]}) == [2, 1]  # int[] cells indexed per element
        assert _ids(rm, {"tag_ids": "30"}) == [2, 3]  # "30" matches 30
        printed = rm.status_of("feed")
        assert printed.last_error is None
        before = rm.get("feed")
        assert before is not None
        with before as table:
            assert table.source == f"postgresql {role}@127.0.0.1:5432/test"
            first = table
        assert rm.refresh("feed") == "not_modified"  # the version answered the same
        pg_conn.execute(
            f"UPDATE \"{feed_table}\" SET category = 'news', updated_at = 2 WHERE id = 4"
        )
        pg_conn.execute(f'UPDATE "{feed_table}" SET score = 0.990 WHERE id = 4')
        assert rm.refresh("feed") == "swapped"
        assert _ids(rm, {"category": "news"}) == [4, 3, 1]
        after = rm.get("feed")
        assert after is not None
        with after as table:
            assert table is not first and table.version == (2, 4)
    finally:
        rm.stop()


@pytest.mark.parametrize("loader", LOADERS)
def test_every_type_loads_as_its_json_value_and_survives_the_shared_snapshot(
    pg_conn: Conn, pg_dsn: str, pg_table: str, loader: str, tmp_path: Path
) -> None:
    create_types_table(pg_conn, pg_table)
    fetcher = resources.FeedDataFetcher(
        {"dsn": pg_dsn, "table": pg_table, "loader": loader, "order_columns": ["id"]}
    )
    try:
        table = fetcher()
    finally:
        fetcher.close()
    assert isinstance(table, resources.FeedTable)
    assert table.rows(range(len(table))) == EXPECTED
    FEED_CODEC.write(table, tmp_path / "feed")
    mapped = FEED_CODEC.open(tmp_path / "feed", 1)  # what every --workers process maps
    try:
        assert mapped.rows(range(len(mapped))) == EXPECTED
    finally:
        mapped.close()


@pytest.mark.parametrize("loader", LOADERS)
def test_non_finite_floats_and_infinite_dates_are_kept(
    pg_conn: Conn, pg_dsn: str, pg_table: str, loader: str
) -> None:
    pg_conn.execute(
        f'CREATE TABLE "{pg_table}" (id int PRIMARY KEY, f float8, n numeric(5,2), d date)'
    )
    pg_conn.execute(
        f"INSERT INTO \"{pg_table}\" VALUES (1, 'NaN', 'NaN', 'infinity'), "
        "(2, '-Infinity', 1.25, '-infinity')"
    )
    fetcher = resources.FeedDataFetcher({"dsn": pg_dsn, "table": pg_table, "loader": loader})
    try:
        table = fetcher()
    finally:
        fetcher.close()
    assert isinstance(table, resources.FeedTable)
    f, n = list(table.column("f")), list(table.column("n"))
    assert math.isnan(f[0]) and f[1] == -math.inf
    assert math.isnan(n[0]) and n[1] == 1.25
    assert list(table.column("d")) == ["infinity", "-infinity"]


def test_a_terminated_backend_is_reconnected_on_the_next_refresh(
    pg_conn: Conn, dsn: str, feed_table: str
) -> None:
    fetcher = resources.FeedDataFetcher(_params(dsn, feed_table, "thread"))
    try:
        fetcher()
        source = fetcher.source
        assert isinstance(source, resources.lowlevel.PostgresSource)
        first = source.backend_pid
        assert first is not None
        pg_conn.execute("SELECT pg_terminate_backend(%s)", (first,))
        pg_conn.execute(f'UPDATE "{feed_table}" SET updated_at = 5')
        table = fetcher()
        assert isinstance(table, resources.FeedTable) and len(table) == 4
        assert source.backend_pid not in (None, first)
    finally:
        fetcher.close()


@pytest.mark.parametrize("loader", LOADERS)
def test_keeps_the_last_good_table_while_unreachable_and_recovers(
    pg_conn: Conn,
    pg_params: dict[str, Any],
    role: str,
    pg_proxy: Any,  # conftest.TcpProxy
    feed_table: str,
    loader: str,
) -> None:
    dsn = f"postgresql://{role}:{SECRET}@127.0.0.1:{pg_proxy.port}/{pg_params['dbname']}"
    rm = _manager(_params(dsn, feed_table, loader))
    rm.start()
    try:
        assert _ids(rm, {"category": "sport"}) == [2]
        pg_proxy.down()
        pg_conn.execute(f"UPDATE \"{feed_table}\" SET category = 'sport', updated_at = 5")
        for _ in range(2):
            with pytest.raises(RefreshError) as info:
                rm.refresh("feed")
            assert SECRET not in str(info.value)
        status = rm.status_of("feed")
        assert status.consecutive_failures == 2
        assert f"postgresql {role}@127.0.0.1:{pg_proxy.port}/" in (status.last_error or "")
        assert SECRET not in (status.last_error or "")
        assert _ids(rm, {"category": "sport"}) == [2]  # the last good table is still served

        pg_proxy.up()
        assert rm.refresh("feed") == "swapped"
        assert _ids(rm, {"category": "sport"}) == [2, 3, 1, 4]
        assert rm.status_of("feed").consecutive_failures == 0
    finally:
        rm.stop()


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("where", ["closed port", "no such database"])
def test_failures_name_the_source_and_never_the_password(
    pg_params: dict[str, Any], role: str, feed_table: str, loader: str, where: str
) -> None:
    p = pg_params
    if where == "closed port":
        dsn = f"postgresql://{role}:{SECRET}@127.0.0.1:1/{p['dbname']}"
        source = f"postgresql {role}@127.0.0.1:1/{p['dbname']}"
    else:
        dsn = f"postgresql://{role}:{SECRET}@{p['host']}:{p['port']}/pg_h_absent"
        source = f"postgresql {role}@{p['host']}:{p['port']}/pg_h_absent"
    rm = _manager(_params(dsn, feed_table, loader))
    with pytest.raises(StartError) as info:
        rm.start()
    message = str(info.value)
    assert f"SourceError: {source}" in message
    assert SECRET not in message and SECRET not in repr(info.value)
    rm.stop()


def test_unknown_index_column_fails_naming_the_param(dsn: str, feed_table: str) -> None:
    fetcher = resources.FeedDataFetcher(
        {**_params(dsn, feed_table, "thread"), "index_columns": ["nope"]}
    )
    try:
        with pytest.raises(ConfigError, match=r"parameter 'index_columns': unknown column"):
            fetcher()
    finally:
        fetcher.close()


def test_a_failed_refresh_keeps_the_last_good_table(
    pg_conn: Conn, dsn: str, feed_table: str
) -> None:
    rm = _manager(_params(dsn, feed_table, "thread"))
    rm.start()
    try:
        pg_conn.execute(f'UPDATE "{feed_table}" SET updated_at = 9')
        pg_conn.execute(f'ALTER TABLE "{feed_table}" RENAME COLUMN category TO kind')
        with pytest.raises(RefreshError) as info:
            rm.refresh("feed")
        assert SECRET not in str(info.value)
        assert _ids(rm, {"category": "news"}) == [3, 1]  # the last good table serves on
    finally:
        rm.stop()
