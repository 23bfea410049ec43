"""Shared fixtures for tests that need the machine's MariaDB, PostgreSQL or Redis.

Where a service is unreachable the test is skipped with the reason; with
``PINEAPPLE_REQUIRE_SERVICES=1`` (CI) it fails instead. Addresses can be moved
with ``PINEAPPLE_MYSQL_HOST``/``_PORT``/``_USER``/``_PASSWORD``/``_DB``,
``PINEAPPLE_PG_HOST``/``_PORT``/``_USER``/``_PASSWORD``/``_DB`` and
``PINEAPPLE_REDIS_ADDR``.

``make unit`` runs the tests that start no other process (a developer's fast
loop): a test is marked ``process`` at collection when its module, or a test
helper it imports, names ``subprocess``, ``multiprocessing`` or the test
servers, or when it uses the ``serve`` fixture; with ``PINEAPPLE_UNIT=1`` a
test that starts a process anyway fails, naming it (mark it, or its module).

Fixtures: ``mysql_params`` (pymysql.connect kwargs), ``mysql_conn`` (an
autocommit connection), ``mysql_dsn`` (Go-form DSN for ``feed_data``),
``mysql_table`` (a unique table name, dropped afterwards), ``redis_addr``;
``pg_params`` (libpq keywords), ``pg_conn`` (an autocommit psycopg connection),
``pg_dsn`` (a ``postgresql://`` DSN for ``feed_data``), ``pg_table`` (a unique
table name, dropped afterwards).
"""

from __future__ import annotations

import multiprocessing.process
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pymysql
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pineapple import builtins

from .conformance._fixtures import ABSENT, fixtures_absent

# The built-in operator and resource types, registered once for the whole suite
# (the server and CLI do the same through pineapple.builtins), so that no test
# depends on another having imported them first. Tests of the bare layers
# (tests/test_layers.py) run in fresh interpreters and are not affected.
builtins.load()


_TESTS = Path(__file__).resolve().parent
_PROCESS_HINTS = re.compile(r"\b(subprocess|multiprocessing|Popen|os\.fork|serve_plugin)\b")
"""What a module that starts processes names (``tests/_serve.py``, ``tests/server/pod.py``)."""
_PROCESS_FIXTURES = frozenset({"serve"})
"""Fixtures that start a process: ``tests/server/conftest.py``'s real ``pineapple serve``."""
_LOCAL_IMPORT = re.compile(r"^\s*from (\.+|tests\.)([\w.]*) import ([\w, ()]+)", re.M)


def _imported_files(path: Path, text: str) -> list[Path]:
    """The test modules ``path`` imports (relative, or from ``tests.``)."""
    found: list[Path] = []
    for dots, dotted, names in _LOCAL_IMPORT.findall(text):  # bounded: the file's imports
        base = _TESTS if dots == "tests." else path.parents[len(dots) - 1]
        stem = base.joinpath(*dotted.split(".")) if dotted else base
        candidates = [stem.with_suffix(".py"), stem / "__init__.py"]
        if not dotted:  # from . import a, b: modules
            names_ = [n.strip(" ()") for n in names.split(",")]
            candidates = [base / f"{n}.py" for n in names_ if n]
        found.extend(c for c in candidates if c.is_file())
    return found


_process_modules: dict[Path, bool] = {}


def _starts_processes(path: Path) -> bool:
    """True when ``path``, or a test module it imports (transitively), names a process."""
    if path not in _process_modules:
        seen, queue, hit = {path}, [path], False
        while queue and not hit:  # bounded: the files under tests/
            current = queue.pop()
            text = current.read_text()
            hit = bool(_PROCESS_HINTS.search(text))
            for imported in _imported_files(current, text):
                if imported not in seen:
                    seen.add(imported)
                    queue.append(imported)
        _process_modules[path] = hit
    return _process_modules[path]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``process`` every test that starts another process (``make unit`` leaves them)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _PROCESS_FIXTURES or _starts_processes(Path(str(item.path))):
            item.add_marker(pytest.mark.process)


@pytest.fixture(autouse=True)
def _unit_starts_no_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``PINEAPPLE_UNIT=1`` (``make unit``), a Python process (a server, the CLI, a
    worker) started by an unmarked test fails it; a tool such as ``ldconfig`` may run."""
    if os.environ.get("PINEAPPLE_UNIT") != "1" or request.node.get_closest_marker("process"):
        return
    where = request.node.nodeid
    popen_init = subprocess.Popen.__init__

    def refuse() -> NoReturn:
        raise AssertionError(
            f"{where} starts a process: it is not a unit test (tests/conftest.py marks "
            "'process' from the module's imports: name it there)"
        )

    def popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = Path(os.fsdecode(argv[0]) if argv else "").name
        if "python" in program or "pineapple" in program:
            refuse()
        popen_init(self, args, *rest, **kwargs)

    def start(self: multiprocessing.process.BaseProcess) -> None:
        refuse()

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A parameter marked ``fixtures_absent`` skips, or fails in CI (``_fixtures``)."""
    if item.get_closest_marker("fixtures_absent") is not None:
        fixtures_absent()


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
def pg_params() -> dict[str, Any]:
    params: dict[str, Any] = {
        "host": os.environ.get("PINEAPPLE_PG_HOST", "127.0.0.1"),
        "port": int(os.environ.get("PINEAPPLE_PG_PORT", "5432")),
        "user": os.environ.get("PINEAPPLE_PG_USER", "root"),
        "password": os.environ.get("PINEAPPLE_PG_PASSWORD", ""),
        "dbname": os.environ.get("PINEAPPLE_PG_DB", "test"),
    }
    try:
        psycopg.connect(connect_timeout=3, **params).close()
    except psycopg.Error as exc:
        service_unavailable(f"PostgreSQL at {params['host']}:{params['port']}", exc)
    return params


@pytest.fixture
def pg_conn(pg_params: dict[str, Any]) -> Iterator[psycopg.Connection[Any]]:
    conn = psycopg.connect(autocommit=True, **pg_params)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def pg_dsn(pg_params: dict[str, Any]) -> str:
    p = pg_params
    password = f":{p['password']}" if p["password"] else ""
    return f"postgresql://{p['user']}{password}@{p['host']}:{p['port']}/{p['dbname']}"


@pytest.fixture
def pg_table(pg_conn: psycopg.Connection[Any]) -> Iterator[str]:
    name = f"pg_h_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        pg_conn.execute(f'DROP TABLE IF EXISTS "{name}"')


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


_NO_FIXTURES = ABSENT
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
