"""Shared fixtures for tests that need the machine's MariaDB or Redis.

Where a service is unreachable the test is skipped with the reason; with
``PINEAPPLE_REQUIRE_SERVICES=1`` (CI) it fails instead. Addresses can be moved
with ``PINEAPPLE_MYSQL_HOST``/``_PORT``/``_USER``/``_PASSWORD``/``_DB`` and
``PINEAPPLE_REDIS_ADDR``.

Fixtures: ``mysql_params`` (pymysql.connect kwargs), ``mysql_conn`` (an
autocommit connection), ``mysql_dsn`` (Go-form DSN for ``feed_data``),
``mysql_table`` (a unique table name, dropped afterwards), ``redis_addr``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any, NoReturn

import pymysql
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pineapple import builtins

# The built-in operator and resource types, registered once for the whole suite
# (the server and CLI do the same through pineapple.builtins), so that no test
# depends on another having imported them first. Tests of the bare layers
# (tests/test_layers.py) run in fresh interpreters and are not affected.
builtins.load()


def service_unavailable(what: str, exc: BaseException) -> NoReturn:
    """Skip (or, with PINEAPPLE_REQUIRE_SERVICES=1, fail) because ``what`` is unreachable."""
    reason = f"{what} unreachable: {type(exc).__name__}: {exc}"
    if os.environ.get("PINEAPPLE_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{reason} (PINEAPPLE_REQUIRE_SERVICES=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def mysql_params() -> dict[str, Any]:
    params: dict[str, Any] = {
        "host": os.environ.get("PINEAPPLE_MYSQL_HOST", "127.0.0.1"),
        "port": int(os.environ.get("PINEAPPLE_MYSQL_PORT", "3306")),
        "user": os.environ.get("PINEAPPLE_MYSQL_USER", "root"),
        "password": os.environ.get("PINEAPPLE_MYSQL_PASSWORD", ""),
        "database": os.environ.get("PINEAPPLE_MYSQL_DB", "test"),
    }
    try:
        pymysql.connect(connect_timeout=3, **params).close()
    except pymysql.Error as exc:
        service_unavailable(f"MariaDB at {params['host']}:{params['port']}", exc)
    return params


@pytest.fixture
def mysql_conn(mysql_params: dict[str, Any]) -> Iterator[pymysql.connections.Connection[Any]]:
    conn = pymysql.connect(autocommit=True, **mysql_params)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def mysql_dsn(mysql_params: dict[str, Any]) -> str:
    p = mysql_params
    return f"{p['user']}:{p['password']}@tcp({p['host']}:{p['port']})/{p['database']}"


@pytest.fixture
def mysql_table(mysql_conn: pymysql.connections.Connection[Any]) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def redis_addr() -> str:
    addr = os.environ.get("PINEAPPLE_REDIS_ADDR", "127.0.0.1:6379")
    host, _, port = addr.rpartition(":")
    client = redis.Redis(
        host=host, port=int(port), socket_connect_timeout=3, retry=Retry(NoBackoff(), 0)
    )
    try:
        client.ping()
    except redis.RedisError as exc:
        service_unavailable(f"Redis at {addr}", exc)
    finally:
        client.close()
    return addr


_NO_FIXTURES = "PINE_FIXTURES_DIR not set or directory absent"
"""The skip reason of every test that needs the public fixtures (tests/conformance/_fixtures.py)."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One loud line when tests did not run because the public fixtures are absent."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and _NO_FIXTURES in str(report.longrepr[2])
    ]
    if skipped:
        where = os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple")
        terminalreporter.write_line(
            f"NOTE: {len(skipped)} conformance tests did not run: the public fixtures are not "
            f"at {where!r}. Clone https://github.com/Liam0205/pineapple and set "
            "PINE_FIXTURES_DIR to its fixtures/ folder (README: The public fixtures).",
            red=True,
            bold=True,
        )
