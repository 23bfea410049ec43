"""Issue 21, item 4, end to end: a ``pineapple serve`` that exits leaves no query on MariaDB.

A timed refresh of ``feed_data`` hangs in its version query (``SLEEP(120)``
once a flag table has a row); the server gets SIGTERM. Its shutdown cancels
the load, which kills the query on the server before the process exits; in
one process and with ``--workers 2`` (where the supervisor loads). Before,
the query ran on for its two minutes after the server had gone.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .._mariadb import running
from .._serve import Serve
from .pod import serve_plugin
from .workers.test_shared_workers import serving_two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.mysql]

WAIT = 30.0  # seconds: the bound of every poll below


def until(what: str, done: Callable[[], bool], wait: float = WAIT) -> None:
    end = time.monotonic() + wait
    while not done():
        assert time.monotonic() < end, f"not within {wait}s: {what}"
        time.sleep(0.05)  # polling another process's state, with a deadline


def hanging_config(dsn: str, table: str, marker: str, interval: float = 1) -> dict[str, Any]:
    """A ``feed_data`` config whose version query (marked ``marker``) sleeps 120 s once
    ``table`` has a row; refreshed every ``interval`` seconds."""
    version = f"SELECT /* {marker} */ SLEEP(IF((SELECT COUNT(*) FROM `{table}`) > 0, 120, 0))"
    outputs = ["id"]
    meta = {"common_input": [], "common_output": [], "item_input": [], "item_output": outputs}
    return {
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "interval": interval,
                "params": {"mysql_dsn": dsn, "table": table, "version_query": version},
            }
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "$metadata": meta,
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": meta,
    }


@pytest.fixture(params=["one process", "--workers 2"])
def hanging_server(
    request: pytest.FixtureRequest,
    mysql_conn: Any,
    mysql_dsn: str,
    mysql_table: str,
    tmp_path: Path,
) -> Iterator[tuple[Serve, str]]:
    marker = f"bdb_{uuid.uuid4().hex[:12]}"
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY)")
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(hanging_config(mysql_dsn, mysql_table, marker)))
    if request.param == "one process":
        server = serve_plugin(config, tmp_path / "closes.log")
        try:
            yield server, marker
        finally:
            server.close()
    else:
        with serving_two_workers(config, tmp_path) as (server, _):
            yield server, marker


@pytest.mark.timeout(120)
def test_sigterm_during_a_hanging_refresh_kills_its_query(
    hanging_server: tuple[Serve, str], mysql_conn: Any, mysql_table: str
) -> None:
    server, marker = hanging_server
    with mysql_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{mysql_table}` VALUES (1)")
    until("a timed refresh hangs in its version query", lambda: running(mysql_conn, marker) == 1)
    assert server.stop() == 0
    # KILL QUERY is asynchronous on the server: the statement ends within milliseconds.
    until("no query of the server left", lambda: running(mysql_conn, marker) == 0, 3.0)
