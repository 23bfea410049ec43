"""A refusal stays visible, in ``/resources`` and ``/metrics``, while the source still holds
the refused data (an unchanged ``version_query``), in one process and with ``--workers 2``
(the ``serve`` fixture's two params), on real processes and real MariaDB; the pod's
state gauges show from the first scrape, once for the pod, whichever worker answers."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pymysql
import pytest
from prometheus_client.parser import text_string_to_metric_families

from .pod import MODES, WAIT, Server, condition, feed_config, fill, pipeline_config, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def al_table(mysql_conn: pymysql.connections.Connection[Any]) -> Iterator[str]:
    """A table of this test's own (``al_`` prefix), and its version table, dropped after."""
    name = f"al_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`, `{name}_v`")


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(server: Server) -> Samples:
    """``/metrics`` on a new connection (with workers: whichever worker accepts it)."""
    text = httpx.get(f"{server.url}/metrics", timeout=WAIT).text
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"{key} twice"
            out[key] = s.value
    return out


def valid(samples: Samples, status: str) -> float:
    labels = (
        ("condition", "Valid"),
        ("resource", "feed"),
        ("status", status),
        ("type", "feed_data"),
    )
    return samples[("pineapple_resource_condition", labels)]


def test_a_refusal_stays_visible_while_the_source_holds_the_refused_data(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, al_table: str
) -> None:
    fill(mysql_conn, al_table, 10)
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{al_table}_v` (v INT)")
        cur.execute(f"INSERT INTO `{al_table}_v` VALUES (1)")
    config = feed_config(mysql_dsn, al_table, interval=600, validate={"min_rows": 5})
    config["resource_config"]["feed"]["params"]["version_query"] = f"SELECT v FROM `{al_table}_v`"
    server = serve(config)

    first = scrape(server)  # the state shows from the first scrape
    assert valid(first, "True") == 1.0 and valid(first, "False") == 0.0
    assert first[("pineapple_config_last_reload_success", ())] == 1.0
    assert any(name == "pineapple_config_generation" for name, _ in first)
    assert first[("pineapple_config_reloads_total", (("result", "error"),))] == 0.0
    assert any(name == "pineapple_build_info" for name, _ in first)
    assert first[("pineapple_http_requests_in_flight", ())] == 0.0

    with mysql_conn.cursor() as cur:  # the source now holds what min_rows refuses
        cur.execute(f"DELETE FROM `{al_table}` WHERE id >= 2")
        cur.execute(f"UPDATE `{al_table}_v` SET v = 2")
    refused = server.admin("refresh")
    assert refused.status_code == 422, refused.text
    assert "min_rows" in refused.json()["error"]

    # The version did not change: NOT_MODIFIED, and the refusal stands.
    for failures in (2, 3):
        again = server.admin("refresh")
        assert again.status_code == 422, again.text
        status = again.json()["resource"]
        assert status["consecutive_failures"] == failures
        assert condition(status, "Valid")["status"] == "False"
        assert "min_rows" in status["last_error"]
    for _ in range(4):  # new connections: with workers, any of them answers
        seen = server.status_anywhere()
        assert condition(seen, "Valid")["status"] == "False"
        assert seen["consecutive_failures"] == 3
        samples = scrape(server)
        assert valid(samples, "False") == 1.0 and valid(samples, "True") == 0.0
        refusals = (("check", "min_rows"), ("resource", "feed"))
        assert samples[("pineapple_resource_validation_failures_total", refusals)] == 1.0
    assert len(server.items()) == 10  # the last good rows serve
    server.wait_line("still holds the refused data", times=2)  # logged before each answer
    assert server.count("recovered") == 0, server.text()

    fill(mysql_conn, al_table, 8, start=2)  # the source is mended: a value is accepted
    with mysql_conn.cursor() as cur:
        cur.execute(f"UPDATE `{al_table}_v` SET v = 3")
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become([{"id": i, "score": 1.0} for i in range(10)])
    mended = scrape(server)
    assert valid(mended, "True") == 1.0 and valid(mended, "False") == 0.0
    server.wait_line("recovered after 3 failed refresh")


def test_a_worker_restart_is_counted_and_the_workers_serving_come_back(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    config = tmp_path / "pineapple.json"
    config.write_bytes(
        orjson.dumps(
            pipeline_config(resource, {"type_name": "recall_resource", "resource_name": "feed"})
        )
    )
    with Server(config, mode=MODES["--workers 2"]) as server:
        first = scrape(server)
        assert first[("pineapple_worker_restarts_total", ())] == 0.0
        assert first[("pineapple_workers", ())] == 2.0
        victim = server.workers()[0]
        victim.kill()
        victim.wait(WAIT)

        def restarted() -> bool:
            samples = scrape(server)
            return (
                samples[("pineapple_worker_restarts_total", ())] == 1.0
                and samples[("pineapple_workers_serving", ())] == 2.0
            )

        wait_until("the restart counted and both workers serving", restarted)
