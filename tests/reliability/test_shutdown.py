"""Issue 11, item 13: SIGTERM during a feed_data load exits 0 at once, not after the load.

A real ``pineapple serve`` loads a MariaDB table through a TCP proxy of the
test's own. After the first load, the proxy makes new connections either
trickle (a load that would take a minute) or stall (the database is a black
hole); the 1 s refresh then hangs in the loader child (``loader: process``)
or on the refresh thread (``loader: thread``). SIGTERM must end the process
with exit code 0 well within ``drain_seconds`` + 2 s: stop cancels the load
(kills the child, shuts the connection down) instead of waiting for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pymysql
import pytest

from .._serve import Serve
from ..server.fakes import unified_config
from ._shutdown import TcpProxy

pytestmark = [pytest.mark.mysql, pytest.mark.e2e]

ROWS = 20_000  # ~2 MB: a trickled load of it takes over a minute
EXIT_WITHIN = 6.0  # seconds from SIGTERM; drain_seconds is 30, nothing is in flight
EVENT_WITHIN = 30.0  # bounds every wait for the proxy to see the refresh


@pytest.fixture
def feed_table(mysql_conn: pymysql.connections.Connection[Any], mysql_table: str) -> str:
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, body VARCHAR(200))")
        cur.execute(
            f"INSERT INTO `{mysql_table}` SELECT seq, REPEAT('x', 100) FROM seq_1_to_{ROWS}"
        )
    return mysql_table


@pytest.fixture
def proxy(mysql_params: dict[str, Any]) -> Iterator[TcpProxy]:
    p = TcpProxy((mysql_params["host"], mysql_params["port"]))
    try:
        yield p
    finally:
        p.close()


def _config(
    tmp_path: Path, mysql_params: dict[str, Any], port: int, table: str, loader: str
) -> Path:
    p = mysql_params
    dsn = f"{p['user']}:{p['password']}@tcp(127.0.0.1:{port})/{p['database']}"
    feed = {
        "type": "feed_data",
        "interval": 1,
        "params": {"mysql_dsn": dsn, "table": table, "loader": loader},
    }
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(unified_config("t", resources={"feed": feed})))
    return path


@pytest.mark.parametrize("loader", ["process", "thread"])
@pytest.mark.parametrize("mode", ["trickle", "stall"])
def test_sigterm_during_a_load_exits_0_at_once(
    tmp_path: Path,
    mysql_params: dict[str, Any],
    feed_table: str,
    proxy: TcpProxy,
    mode: str,
    loader: str,
) -> None:
    with Serve(
        _config(tmp_path, mysql_params, proxy.port, feed_table, loader), wait=False
    ) as serve:
        serve.start(EVENT_WITHIN)
        proxy.mode = mode  # type: ignore[assignment]
        seen = proxy.streaming if mode == "trickle" else proxy.held
        assert seen.wait(EVENT_WITHIN), f"no refresh reached the proxy in {mode} mode"
        started = time.monotonic()
        code = serve.terminate(EXIT_WITHIN + 30)  # TimeoutExpired if it never exits
        seconds = time.monotonic() - started
        assert code == 0, "".join(serve.log)
        assert seconds < EXIT_WITHIN, f"exit took {seconds:.1f}s:\n" + "".join(serve.log)
