"""Issue 21, items 4 and 5: a ``feed_data`` load leaves no query running on MariaDB, and ends.

Item 4: a read that times out, a cancel and a manager stop each kill the
query on the server (``KILL QUERY`` from a side connection); the error says
it timed out, names the source and never the password. Item 5: a query that
drips rows (each row in time for the read timeout) is stopped by the one
total bound ``load_timeout_ms``, with either loader.

Each query carries a marker comment; ``information_schema.PROCESSLIST``
tells whether a statement with it still runs (our own look-up excluded).
The unbounded case is real: without the kill, ``SLEEP(60)`` runs for a
minute; without the total bound, the dripping query runs for hours. Every
wait below is bounded (``WAIT``), and each test has a timeout.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import Manager, RefreshError
from resources import SourceError

from .._mariadb import Conn, reader_account, running

pytestmark = pytest.mark.mysql

SECRET = "pw-bdb-Secret-4242"
WAIT = 10.0  # seconds: the bound of every poll of the server's state below
LOADERS = ["process", "thread"]


@pytest.fixture
def bdb_user(mysql_conn: Conn, mysql_params: dict[str, Any]) -> Iterator[str]:
    """A user with password ``SECRET`` that may read database ``test`` (and nothing else)."""
    with reader_account(mysql_conn, mysql_params["database"], SECRET, "bdb") as user:
        yield user


@pytest.fixture
def dsn(mysql_params: dict[str, Any], bdb_user: str) -> str:
    p = mysql_params
    return f"{bdb_user}:{SECRET}@tcp({p['host']}:{p['port']})/{p['database']}"


@pytest.fixture
def marker() -> str:
    return f"bdb_{uuid.uuid4().hex[:12]}"


def _until(what: str, done: Callable[[], bool]) -> None:
    """Poll another process's state until ``done``, at most ``WAIT`` seconds."""
    end = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < end, f"not within {WAIT}s: {what}"
        time.sleep(0.02)


def _none_left(conn: Conn, marker: str) -> None:
    # KILL QUERY is asynchronous on the server: the statement ends within milliseconds.
    _until(f"no query {marker} running", lambda: running(conn, marker) == 0)


def _fetcher(dsn: str, query: str, loader: str, **params: Any) -> resources.FeedDataFetcher:
    return resources.FeedDataFetcher(
        {"mysql_dsn": dsn, "query": query, "loader": loader, "connect_timeout_ms": 2000, **params}
    )


def _sleeping(marker: str, seconds: int = 60) -> str:
    return f"SELECT /* {marker} */ 1 AS id, SLEEP({seconds}) AS s"


def _sleeps_once_filled(marker: str, table: str) -> str:
    """A version query that answers at once while ``table`` is empty, and sleeps after."""
    return f"SELECT /* {marker} */ SLEEP(IF((SELECT COUNT(*) FROM `{table}`) > 0, 60, 0))"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("where", ["query", "version_query"])
def test_a_read_timeout_kills_the_query_and_says_it_timed_out(
    mysql_conn: Conn, dsn: str, bdb_user: str, marker: str, loader: str, where: str
) -> None:
    if where == "query":
        fetcher = _fetcher(dsn, _sleeping(marker), loader, read_timeout_ms=500)
    else:
        fetcher = _fetcher(
            dsn, "SELECT 1 AS id", loader, read_timeout_ms=500, version_query=_sleeping(marker)
        )
    try:
        for _ in range(3):  # each retry would have added one more running query
            started = time.monotonic()
            with pytest.raises(SourceError) as info:
                fetcher()
            assert time.monotonic() - started < 10.0  # SLEEP(60) unless the read gives up
            message = str(info.value)
            assert message.startswith(f"mysql {bdb_user}@127.0.0.1:")
            assert "query timed out: no data from the server for 0.5s (read_timeout_ms)" in message
            assert "NoneType" not in message and "failed" not in message
            assert SECRET not in message
            _none_left(mysql_conn, marker)
    finally:
        fetcher.close()


def _start_in_thread(fetcher: resources.FeedDataFetcher) -> tuple[threading.Thread, list[str]]:
    errors: list[str] = []

    def run() -> None:
        try:
            fetcher()
        except SourceError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_cancel_kills_the_running_query(
    mysql_conn: Conn, dsn: str, marker: str, loader: str
) -> None:
    fetcher = _fetcher(dsn, _sleeping(marker), loader)
    thread, errors = _start_in_thread(fetcher)
    try:
        _until("the query runs", lambda: running(mysql_conn, marker) == 1)
        fetcher.cancel()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert len(errors) == 1 and errors[0].endswith(": load cancelled (stopping)"), errors
        assert SECRET not in errors[0]
        _none_left(mysql_conn, marker)
    finally:
        fetcher.cancel()
        thread.join(WAIT)
        fetcher.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_manager_stop_kills_the_query_of_a_timed_refresh(
    mysql_conn: Conn, mysql_table: str, dsn: str, marker: str, loader: str
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY)")
    # The version query sleeps once the table has a row: the first load is quick,
    # the next timed refresh (1 s later) hangs in it until the manager stops.
    version = _sleeps_once_filled(marker, mysql_table)
    rm = Manager()
    rm.load_from_root_config(
        {
            "resource_config": {
                "feed": {
                    "type": "feed_data",
                    "interval": 1,
                    "params": {
                        "mysql_dsn": dsn,
                        "table": mysql_table,
                        "loader": loader,
                        "version_query": version,
                    },
                }
            }
        }
    )
    rm.start()
    try:
        with mysql_conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{mysql_table}` VALUES (1)")
        _until("the timed refresh's version query runs", lambda: running(mysql_conn, marker) == 1)
    finally:
        rm.stop()
    _none_left(mysql_conn, marker)
    assert SECRET not in (rm.status_of("feed").last_error or "")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_query_that_drips_rows_is_stopped_by_the_load_timeout(
    mysql_conn: Conn, dsn: str, marker: str, loader: str
) -> None:
    # A 20 KB row every 0.1 s: each row fills the server's network buffer, so it is
    # sent at once and no read ever waits long; 100,000 rows would take almost 3 hours.
    query = (
        f"SELECT /* {marker} */ seq AS id, REPEAT('x', 20000) AS pad, SLEEP(0.1) AS s "
        "FROM seq_1_to_100000"
    )
    fetcher = _fetcher(dsn, query, loader, read_timeout_ms=2000, load_timeout_ms=2500)
    try:
        started = time.monotonic()
        with pytest.raises(SourceError) as info:
            fetcher()
        elapsed = time.monotonic() - started
        # the process loader's per-frame wait alone would stop it at 2 + 2 + 5 = 9 s
        assert 2.4 < elapsed < 6.0, elapsed
        assert str(info.value).endswith(": load timed out after 2.5s (load_timeout_ms)")
        _none_left(mysql_conn, marker)
    finally:
        fetcher.close()


@pytest.mark.timeout(60)
def test_the_manager_reports_the_timeout_naming_the_resource(
    mysql_conn: Conn, mysql_table: str, dsn: str, marker: str
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY)")
    params = {
        "mysql_dsn": dsn,
        "table": mysql_table,
        "read_timeout_ms": 500,
        "version_query": _sleeps_once_filled(marker, mysql_table),
    }
    rm = Manager()
    rm.load_from_root_config(
        {"resource_config": {"feed": {"type": "feed_data", "interval": -1, "params": params}}}
    )
    rm.start()
    try:
        with mysql_conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{mysql_table}` VALUES (1)")
        with pytest.raises(RefreshError) as info:
            rm.refresh("feed")
        assert "resource 'feed'" in str(info.value) and SECRET not in str(info.value)
        last = rm.status_of("feed").last_error or ""
        assert "query timed out" in last and SECRET not in last and "NoneType" not in last
        _none_left(mysql_conn, marker)
    finally:
        rm.stop()


@pytest.mark.parametrize("value", [0, -1])
def test_load_timeout_must_be_positive(dsn: str, value: int) -> None:
    with pytest.raises(ConfigError, match=r"parameter 'load_timeout_ms': must be > 0"):
        _fetcher(dsn, "SELECT 1 AS id", "thread", load_timeout_ms=value)
