"""feed_data against the machine's MariaDB (database ``test``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import resources
from pineapple.resource import Manager, RefreshError, StartError

from .._mariadb import Conn, reader_account

pytestmark = pytest.mark.mysql

SECRET = "pw-Feed-Secret-77"


@pytest.fixture
def feed_table(mysql_conn: Conn, mysql_table: str) -> str:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, category VARCHAR(16), "
            "tag_ids VARCHAR(64), score DECIMAL(6,3), updated_at BIGINT NOT NULL)"
        )
        cur.executemany(
            f"INSERT INTO `{mysql_table}` VALUES (%s, %s, %s, %s, %s)",
            [
                (1, "news", "[10, 20]", "0.500", 1),
                (2, "sport", "20,30", "0.900", 1),
                (3, "news", "[30]", "0.700", 1),
                (4, "tech", None, None, 1),
            ],
        )
    return mysql_table


@pytest.fixture
def mysql_user(mysql_conn: Conn, mysql_params: dict[str, Any]) -> Iterator[str]:
    """A user with password ``SECRET`` that may read database ``test``."""
    with reader_account(mysql_conn, mysql_params["database"], SECRET, "pine") as user:
        yield user


def _params(dsn: str, table: str, **extra: Any) -> dict[str, Any]:
    return {
        "mysql_dsn": dsn,
        "table": table,
        "index_columns": ["category", "tag_ids"],
        "version_query": f"SELECT MAX(updated_at), COUNT(*) FROM `{table}`",
        "connect_timeout_ms": 2000,
        **extra,
    }


def _connection_id(source: resources.lowlevel.MySQLSource) -> int | None:
    return source.connection_id  # a call: mypy must not narrow it across refreshes


def _config(params: dict[str, Any]) -> dict[str, Any]:
    return {"resource_config": {"feed": {"type": "feed_data", "params": params}}}


def _ids(rm: Manager, match: dict[str, Any]) -> list[Any]:
    handle = rm.get("feed")
    assert handle is not None
    with handle as table:
        return [r["id"] for r in table.match(match, order_by="score", descending=True)]


@pytest.mark.parametrize("loader", ["process", "thread"])
def test_loads_and_recalls_by_index_with_both_dsn_forms(
    mysql_params: dict[str, Any], feed_table: str, mysql_user: str, loader: str
) -> None:
    p = mysql_params
    dsns = [
        f"{mysql_user}:{SECRET}@tcp({p['host']}:{p['port']})/{p['database']}?parseTime=true",
        f"mysql://{mysql_user}:{SECRET}@{p['host']}:{p['port']}/{p['database']}",
    ]
    for dsn in dsns:
        fetcher = resources.FeedDataFetcher(_params(dsn, feed_table, loader=loader))
        try:
            table = fetcher()
        finally:
            fetcher.close()
        assert isinstance(table, resources.FeedTable)
        assert len(table) == 4
        assert list(table.column("score")) == [0.5, 0.9, 0.7, None]  # DECIMAL -> float
        assert [r["id"] for r in table.match({"tag_ids": 20})] == [1, 2]
        assert [r["id"] for r in table.match({"category": ["news", "tech"]})] == [1, 3, 4]
        assert table.version == (1, 4)
        summary = resources.lowlevel.FEED_DATA_SCHEMA.printer.summarize(table)  # type: ignore[union-attr]
        assert f"from mysql {mysql_user}@{p['host']}:{p['port']}/{p['database']}" in summary
        assert SECRET not in summary


def test_refreshes_after_update_and_is_not_modified_otherwise(
    mysql_conn: Conn, mysql_dsn: str, feed_table: str
) -> None:
    rm = Manager()
    rm.load_from_root_config(
        {
            "resource_config": {
                "feed": {"type": "feed_data", "params": _params(mysql_dsn, feed_table)}
            }
        }
    )
    rm.start()
    try:
        assert _ids(rm, {"category": "news"}) == [3, 1]
        assert rm.refresh("feed") == "not_modified"
        with mysql_conn.cursor() as cur:
            cur.execute(f"UPDATE `{feed_table}` SET category = 'news', updated_at = 2 WHERE id = 2")
        assert rm.refresh("feed") == "swapped"
        assert _ids(rm, {"category": "news"}) == [2, 3, 1]
        assert rm.refresh("feed") == "not_modified"
        assert rm.status_of("feed").version == 2
    finally:
        rm.stop()


def test_killed_connection_is_reopened_on_the_next_refresh(
    mysql_conn: Conn, mysql_dsn: str, feed_table: str
) -> None:
    fetcher = resources.FeedDataFetcher(_params(mysql_dsn, feed_table))
    source = fetcher.source
    assert isinstance(source, resources.lowlevel.MySQLSource)
    before_start = _connection_id(source)
    assert before_start is None  # lazily opened
    rm = Manager()
    rm.register("feed", fetcher, interval=-1, type_name="feed_data")
    rm.start()
    try:
        first_id = _connection_id(source)
        assert first_id is not None
        with mysql_conn.cursor() as cur:
            cur.execute(f"KILL {int(first_id)}")
            cur.execute(f"UPDATE `{feed_table}` SET updated_at = 3 WHERE id = 4")
        assert rm.refresh("feed") == "swapped"
        assert _connection_id(source) not in (None, first_id)
        assert rm.status_of("feed").consecutive_failures == 0
    finally:
        rm.stop()
    after_stop = _connection_id(source)
    assert after_stop is None  # stop closed the fetcher's connection
    with mysql_conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (first_id,)
        )
        assert cur.fetchone() == (0,)


def test_keeps_the_last_good_value_while_unreachable_and_recovers(
    mysql_conn: Conn,
    mysql_params: dict[str, Any],
    mysql_user: str,
    mysql_proxy: Any,  # conftest.TcpProxy
    feed_table: str,
) -> None:
    dsn = f"{mysql_user}:{SECRET}@tcp(127.0.0.1:{mysql_proxy.port})/{mysql_params['database']}"
    rm = Manager()
    rm.load_from_root_config(_config(_params(dsn, feed_table)))
    rm.start()
    try:
        assert _ids(rm, {"category": "sport"}) == [2]
        mysql_proxy.down()
        with mysql_conn.cursor() as cur:
            cur.execute(f"UPDATE `{feed_table}` SET category = 'sport', updated_at = 5")
        for _ in range(2):
            with pytest.raises(RefreshError) as info:
                rm.refresh("feed")
            assert SECRET not in str(info.value)
        status = rm.status_of("feed")
        assert status.consecutive_failures == 2
        assert f"mysql {mysql_user}@127.0.0.1:{mysql_proxy.port}/" in (status.last_error or "")
        assert SECRET not in (status.last_error or "")
        assert _ids(rm, {"category": "sport"}) == [2]  # the last good table is still served

        mysql_proxy.up()
        assert rm.refresh("feed") == "swapped"
        assert _ids(rm, {"category": "sport"}) == [2, 3, 1, 4]
        assert rm.status_of("feed").consecutive_failures == 0
    finally:
        rm.stop()


@pytest.mark.parametrize("wrong", ["port", "password"])
def test_unreachable_or_refused_at_start_fails_without_the_password(
    mysql_params: dict[str, Any], mysql_user: str, feed_table: str, wrong: str
) -> None:
    p = mysql_params
    port = 1 if wrong == "port" else p["port"]
    password = SECRET if wrong == "port" else SECRET + "-wrong"
    dsn = f"{mysql_user}:{password}@tcp({p['host']}:{port})/{p['database']}"
    rm = Manager()
    rm.load_from_root_config(_config(_params(dsn, feed_table)))
    with pytest.raises(StartError) as info:
        rm.start()
    message = str(info.value)
    assert "'feed'" in message
    assert f"SourceError: mysql {mysql_user}@{p['host']}:{port}/{p['database']}" in message
    assert ("Access denied" in message) == (wrong == "password")
    assert SECRET not in message
    assert SECRET not in (rm.status_of("feed").last_error or "")


def test_unknown_index_column_fails_start_naming_param(mysql_dsn: str, feed_table: str) -> None:
    rm = Manager()
    params = _params(mysql_dsn, feed_table, index_columns=["category", "colour"])
    rm.load_from_root_config(_config(params))
    with pytest.raises(StartError) as info:
        rm.start()
    assert "'feed'" in str(info.value)
    assert "parameter 'index_columns': unknown column(s) ['colour']" in str(info.value)


@pytest.mark.parametrize("loader", ["process", "thread"])
def test_driver_values_become_json_values(
    mysql_conn: Conn, mysql_table: str, mysql_dsn: str, loader: str
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, created DATETIME, "
            "day DATE, price DECIMAL(8,2), raw VARBINARY(8))"
        )
        cur.execute(
            f"INSERT INTO `{mysql_table}` VALUES (1, '2026-11-30 08:15:00', '2026-11-30', "
            "'12.50', 'abc'), (2, NULL, NULL, NULL, NULL)"
        )
    params = {"mysql_dsn": mysql_dsn, "table": mysql_table, "loader": loader}
    fetcher = resources.FeedDataFetcher(params)
    assert isinstance(fetcher.source, resources.lowlevel.MySQLSource)
    assert fetcher.source.in_process == (loader == "thread")
    try:
        table = fetcher()
        assert isinstance(table, resources.FeedTable)
        rows = table.match({}, order_by="id")
    finally:
        fetcher.close()
    assert rows[0] == {
        "id": 1,
        "created": "2026-11-30T08:15:00",
        "day": "2026-11-30",
        "price": 12.5,
        "raw": "YWJj",  # bytes as base64, as Go's encoding/json writes a []byte
    }
    assert rows[1] == {"id": 2, "created": None, "day": None, "price": None, "raw": None}
