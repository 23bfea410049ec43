"""Safe refreshes end to end: a real ``pineapple serve``, real MariaDB and CSV sources.

Validators refuse bad data before the swap while requests keep being served,
a rollback serves the previous rows without touching the database, a pinned
resource ignores source changes until unpinned, and a table over the memory
budget is refused. Every wait is bounded (process timeouts, deadlines).

Every test runs against one process and against ``--workers 2`` (the
``serve`` fixture's two params) with the same expected answers: the pod is
one product. The only allowance is that an admin answer comes once the
answering worker serves the result, and another worker within its follow
poll: reads of served items after an action wait for it (:meth:`Server.items_become`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .pod import (
    WAIT,
    Server,
    admin_cli,
    condition,
    feed_config,
    fill,
    pipeline_config,
    wait_until,
)

pytestmark = pytest.mark.e2e


class Load:
    """Requests in flight: a thread posting /execute until stopped, counting what it saw."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.seen: list[tuple[int, int]] = []  # (status, items)
        self.stop = threading.Event()
        self.first = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.first.wait(WAIT)

    def _run(self) -> None:
        with httpx.Client(base_url=self.server.url, timeout=WAIT) as client:
            deadline = time.monotonic() + 4 * WAIT
            while not self.stop.is_set() and time.monotonic() < deadline:  # bounded
                r = client.post("/execute", content=b'{"common": {}, "items": []}')
                self.seen.append((r.status_code, len(r.json().get("items", []))))
                self.first.set()

    def finish(self) -> list[tuple[int, int]]:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        return self.seen


def test_an_emptied_table_is_refused_while_requests_keep_being_served(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 10)
    validate = {"min_rows": 1, "max_change_ratio": 0.5}
    server = serve(feed_config(mysql_dsn, mysql_table, validate=validate))
    assert len(server.items()) == 10
    load = Load(server)
    with mysql_conn.cursor() as cur:
        cur.execute(f"DELETE FROM `{mysql_table}`")  # the bad upstream job
    refused = server.admin("refresh")
    assert refused.status_code == 422 and "min_rows: 0 rows" in refused.json()["error"]
    fill(mysql_conn, mysql_table, 4)  # half-filled: 10 -> 4 rows
    refused = server.admin("refresh")
    assert refused.status_code == 422 and "max_change_ratio" in refused.json()["error"]
    seen = load.finish()
    assert seen and all(s == (200, 10) for s in seen), set(seen)  # never a refused table
    status = server.status()
    assert status["version"] == 1
    valid = condition(status, "Valid")
    assert valid["status"] == "False" and "max_change_ratio" in valid["message"]
    if not server.supervised:  # the supervisor's refusals are not in a worker's /metrics yet
        metrics = server.http.get("/metrics").text
        for check in ("min_rows", "max_change_ratio"):
            family = "pineapple_resource_validation_failures_total"
            assert f'{family}{{check="{check}",resource="feed"}} 1.0' in metrics
    refusal = re.escape("refused (Valid=False)")
    server.wait_line(refusal, WAIT, times=2)  # both refusals are logged
    assert server.count(refusal) == 2  # once each
    forced = server.admin("refresh", query="?force=1")  # an admin accepts it on purpose
    assert forced.status_code == 200 and forced.json()["result"] == "swapped"
    server.items_become([{"id": i, "score": 1.0} for i in range(4)])
    assert condition(server.status(), "Valid")["reason"] == "Forced"
    server.wait_line(re.escape("validators overridden"), WAIT)


def test_a_csv_with_a_missing_column_is_refused(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    csv = tmp_path / "items.csv"
    csv.write_text("id,score\n1,0.5\n2,0.7\n")
    resource = {
        "type": "csv_file",
        "interval": -1,
        "params": {"path": str(csv), "format": "list"},
        "validate": {"required_columns": ["id", "score"]},
    }
    server = serve(
        pipeline_config(resource, {"type_name": "recall_resource", "resource_name": "feed"})
    )
    assert server.items() == [{"id": 1, "score": 0.5}, {"id": 2, "score": 0.7}]
    csv.write_text("id\n1\n2\n3\n")  # a broken export
    refused = server.admin("refresh")
    assert refused.status_code == 422
    assert "required_columns: row 0 has no column(s) ['score']" in refused.json()["error"]
    assert server.items() == [{"id": 1, "score": 0.5}, {"id": 2, "score": 0.7}]
    assert condition(server.status(), "Valid")["status"] == "False"


def test_rollback_serves_the_previous_rows_without_touching_the_database(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 5, score=1.0)
    server = serve(feed_config(mysql_dsn, mysql_table, keep_previous=True))
    with mysql_conn.cursor() as cur:
        cur.execute(f"UPDATE `{mysql_table}` SET score = -1")  # bad, but valid
    assert server.admin("refresh").json()["result"] == "swapped"
    assert {item["score"] for item in server.items()} == {-1.0}
    assert server.status()["has_previous"]
    with mysql_conn.cursor() as cur:
        cur.execute(f"DROP TABLE `{mysql_table}`")  # any read of the database would now fail
    done = admin_cli(server, "rollback", "feed", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["result"] == "rolled_back"
    server.items_become([{"id": i, "score": 1.0} for i in range(5)])
    status = server.status()
    assert condition(status, "Pinned")["status"] == "True"  # or the next refresh undoes it
    assert status["last_error"] is None and status["version"] == 3
    again = admin_cli(server, "rollback", "feed")
    assert again.returncode == 1 and "no previous value" in again.stderr


def test_a_pinned_resource_ignores_a_source_change_until_unpinned(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed, probe = tmp_path / "feed.json", tmp_path / "probe.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    probe.write_text("[]")

    def file_resource(path: Path) -> dict[str, Any]:
        return {"type": "json_file", "interval": 1, "params": {"path": str(path)}}

    config = pipeline_config(
        file_resource(feed), {"type_name": "recall_resource", "resource_name": "feed"}
    )
    config["resource_config"]["probe"] = file_resource(probe)  # its timed refreshes show ticks
    server = serve(config)
    pinned = admin_cli(server, "pin", "feed")
    assert pinned.returncode == 0, pinned.stderr
    feed.write_text('[{"id": 2, "score": 2.0}]')
    ticks = server.status("probe")["last_attempt_at"]
    wait_until(  # two timed refreshes of the unpinned probe: feed's timer ran too
        "two probe refreshes",
        lambda: server.status("probe")["last_attempt_at"] >= ticks + 1.5,
    )
    assert server.items() == [{"id": 1, "score": 1.0}]
    conflict = server.admin("refresh")
    assert conflict.status_code == 409 and "'feed' is pinned" in conflict.json()["error"]
    assert admin_cli(server, "unpin", "feed").returncode == 0
    wait_until("the timed refresh after unpin", lambda: server.status()["version"] == 2)
    server.items_become([{"id": 2, "score": 2.0}])
    assert condition(server.status(), "Pinned")["status"] == "False"


def test_a_table_over_the_memory_budget_is_refused_and_the_old_one_kept(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 10)
    # A 10-row table is a few KiB; 20,000 more rows are far more, both in one process's
    # heap and as the Arrow snapshot workers map.
    budget = 200_000
    server = serve(
        feed_config(mysql_dsn, mysql_table), "--resource-memory-budget-bytes", str(budget)
    )
    size = server.status()["size_bytes"]
    assert 0 < size < budget
    fill(mysql_conn, mysql_table, 20_000, start=10)
    refused = server.admin("refresh")
    assert refused.status_code == 507, refused.text
    assert (
        "memory_budget" in refused.json()["error"] and f"{budget} bytes" in refused.json()["error"]
    )
    assert len(server.items()) == 10
    listing = server.http.get("/resources").json()
    assert listing["memory"]["budget_bytes"] == budget
    assert listing["memory"]["in_use_bytes"] == size
    assert listing["resources"][0]["size_bytes"] == size
