"""A PostgreSQL ``feed_data`` load leaves no query running on the server, and ends.

A read that times out, a load that passes ``load_timeout_ms``, a cancel and
a manager stop each end the query on the server (``pg_terminate_backend``
from a side connection), with either loader; the backend is then seen gone
from ``pg_stat_activity``. The error says what happened, names the source
and never the password.

Each query carries a marker comment; ``pg_stat_activity`` tells whether a
backend that ran it still exists (our own look-up excluded). The unbounded
case is real: without the cancel, ``pg_sleep(60)`` runs for a minute after
the client gave up. Every wait below is bounded (``WAIT``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import resources
from pineapple.resource import Manager
from resources import SourceError

from .._postgres import Conn, gone_within, reader_role, running

pytestmark = pytest.mark.postgres

SECRET = "pw-PgBound-Secret-77"
WAIT = 10.0  # seconds: the bound of every poll of the server's state below
LOADERS = ["process", "thread"]


@pytest.fixture
def flag_table(pg_conn: Conn, pg_table: str) -> str:
    """An empty table: the version queries below sleep once it has a row."""
    pg_conn.execute(f'CREATE TABLE "{pg_table}" (id bigint PRIMARY KEY)')
    return pg_table


@pytest.fixture
def role(pg_conn: Conn, flag_table: str) -> Iterator[str]:
    with reader_role(pg_conn, flag_table, SECRET, "pgh_bound") as name:
        yield name


@pytest.fixture
def dsn(pg_params: dict[str, Any], role: str) -> str:
    p = pg_params
    return f"postgresql://{role}:{SECRET}@{p['host']}:{p['port']}/{p['dbname']}"


@pytest.fixture
def marker() -> str:
    return f"pgb_{uuid.uuid4().hex[:12]}"


def _until(what: str, done: Callable[[], bool]) -> None:
    end = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < end, f"not within {WAIT}s: {what}"
        time.sleep(0.02)  # polling the server's view of another session, with a deadline


def _none_left(conn: Conn, marker: str) -> None:
    assert gone_within(conn, marker, WAIT), f"a backend that ran {marker} is still there"


def _fetcher(dsn: str, query: str, loader: str, **params: Any) -> resources.FeedDataFetcher:
    return resources.FeedDataFetcher(
        {"dsn": dsn, "query": query, "loader": loader, "connect_timeout_ms": 2000, **params}
    )


def _sleeping(marker: str, seconds: int = 60) -> str:
    return f"SELECT /* {marker} */ 1 AS id FROM pg_sleep({seconds})"


def _sleeps_once_filled(marker: str, table: str) -> str:
    return (
        f'SELECT /* {marker} */ pg_sleep(CASE WHEN (SELECT COUNT(*) FROM "{table}") > 0 '
        "THEN 60 ELSE 0 END)::text"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("where", ["query", "version_query"])
def test_a_read_timeout_cancels_the_query_and_its_backend_is_gone(
    pg_conn: Conn, dsn: str, role: str, marker: str, loader: str, where: str
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
            assert time.monotonic() - started < 10.0  # pg_sleep(60) unless the read gives up
            message = str(info.value)
            assert message.startswith(f"postgresql {role}@127.0.0.1:5432/test: ")
            assert "query timed out: no data from the server for 0.5s (read_timeout_ms)" in message
            assert "failed" not in message and SECRET not in message
            _none_left(pg_conn, marker)
    finally:
        fetcher.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_rows_that_drip_are_stopped_by_the_load_timeout(
    pg_conn: Conn, dsn: str, marker: str, loader: str
) -> None:
    # A 20 KB row every 0.05 s: each row fills the server's send buffer and is sent at
    # once, so reads keep hearing from the server; 100,000 rows would take 80 minutes.
    query = (
        f"SELECT /* {marker} */ g AS id, repeat('x', 20000) AS pad "
        "FROM generate_series(1, 100000) g, LATERAL (SELECT pg_sleep(0.05)) s"
    )
    fetcher = _fetcher(dsn, query, loader, read_timeout_ms=60000, load_timeout_ms=2500)
    try:
        started = time.monotonic()
        with pytest.raises(SourceError) as info:
            fetcher()
        elapsed = time.monotonic() - started
        assert 2.4 < elapsed < 6.0, elapsed
        assert str(info.value).endswith(": load timed out after 2.5s (load_timeout_ms)")
        _none_left(pg_conn, marker)
    finally:
        fetcher.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_cancel_stops_the_running_query(
    pg_conn: Conn, dsn: str, marker: str, loader: str
) -> None:
    fetcher = _fetcher(dsn, _sleeping(marker), loader)
    errors: list[str] = []

    def run() -> None:
        try:
            fetcher()
        except SourceError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _until("the query runs", lambda: running(pg_conn, marker) == 1)
        fetcher.cancel()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert len(errors) == 1 and errors[0].endswith(": load cancelled (stopping)"), errors
        assert SECRET not in errors[0]
        _none_left(pg_conn, marker)
    finally:
        fetcher.cancel()
        thread.join(WAIT)
        fetcher.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_manager_stop_cancels_the_query_of_a_timed_refresh(
    pg_conn: Conn, flag_table: str, dsn: str, marker: str, loader: str
) -> None:
    rm = Manager()
    params = {
        "dsn": dsn,
        "table": flag_table,
        "loader": loader,
        "version_query": _sleeps_once_filled(marker, flag_table),
    }
    rm.load_from_root_config(
        {"resource_config": {"feed": {"type": "feed_data", "interval": 1, "params": params}}}
    )
    rm.start()
    try:
        pg_conn.execute(f'INSERT INTO "{flag_table}" VALUES (1)')
        _until(
            "the timed refresh's version query runs",
            lambda: running(pg_conn, marker, active=True) == 1,
        )
    finally:
        rm.stop()
    _none_left(pg_conn, marker)
    assert SECRET not in (rm.status_of("feed").last_error or "")
