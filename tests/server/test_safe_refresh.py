"""Safe refreshes end to end: a real ``pineapple serve`` process, real MariaDB and CSV sources.

Validators refuse bad data before the swap while requests keep being served,
a rollback serves the previous rows without touching the database, a pinned
resource ignores source changes until unpinned, and a table over the memory
budget is refused. Every wait is bounded (process timeouts, deadlines).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .._serve import LISTENING

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from pineapple.cli import main; sys.exit(main())"
WAIT = 30.0  # seconds: the bound of every wait below
SERVE_ARGS = ("--addr", "127.0.0.1:0", "--no-watch", "--shutdown-delay-seconds", "0")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PINEAPPLE_ADMIN_TOKEN", None)
    return env


class Server:
    """``pineapple serve CONFIG`` on a free loopback port; killed by ``close``."""

    def __init__(self, config: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", str(config), *SERVE_ARGS, *args],
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        self.log: list[str] = []
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # bounded: the process ends or listens
            self.log.append(line)
            found = LISTENING.search(line)
            if found:
                self.url = found.group(1)
                break
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()
        if not self.url:
            self.close()
            raise AssertionError("serve exited before listening:\n" + "".join(self.log))
        self.http = httpx.Client(base_url=self.url, timeout=WAIT)

    @property
    def addr(self) -> str:
        return self.url.removeprefix("http://")

    def _read_rest(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    def items(self) -> list[dict[str, Any]]:
        response = self.http.post("/execute", content=b'{"common": {}, "items": []}')
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    def status(self, name: str = "feed") -> dict[str, Any]:
        status: dict[str, Any] = self.http.get(f"/resources/{name}").json()["status"]
        return status

    def admin(self, action: str, name: str = "feed", query: str = "") -> httpx.Response:
        return self.http.post(f"/admin/resources/{name}/{action}{query}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._drain.join(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        if hasattr(self, "http"):
            self.http.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(config: dict[str, Any], *args: str) -> Server:
        path = tmp_path / "pineapple.json"
        path.write_bytes(orjson.dumps(config))
        server = Server(path, *args)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.close()


def _config(resource: dict[str, Any], operator: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "common_input": [],
        "common_output": [],
        "item_input": [],
        "item_output": ["id", "score"],
    }
    return {
        "_PINEAPPLE_VERSION": 1,
        "resource_config": {"feed": resource},
        "pipeline_config": {"operators": {"recall": {**operator, "$metadata": meta}}},
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id", "score"],
        },
    }


def _feed_config(dsn: str, table: str, interval: float = -1, **entry: Any) -> dict[str, Any]:
    params = {"mysql_dsn": dsn, "table": table, "order_columns": ["id"], "loader": "thread"}
    resource = {"type": "feed_data", "interval": interval, "params": params, **entry}
    operator = {
        "type_name": "recall_feed_data",
        "resource_name": "feed",
        "order_by": "id",
        "default_size": 100_000,
        "max_size": 100_000,
    }
    return _config(resource, operator)


def _fill(conn: Any, table: str, n: int, score: float = 1.0, start: int = 0) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE IF NOT EXISTS `{table}` (id INT PRIMARY KEY, score DOUBLE)")
        cur.executemany(
            f"INSERT INTO `{table}` VALUES (%s, %s)",
            [(i, score) for i in range(start, start + n)],
        )


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    cond: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == kind)
    return cond


def _admin_cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "admin", *args, "--addr", server.addr],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=WAIT,
    )


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
    _fill(mysql_conn, mysql_table, 10)
    validate = {"min_rows": 1, "max_change_ratio": 0.5}
    server = serve(_feed_config(mysql_dsn, mysql_table, validate=validate))
    assert len(server.items()) == 10
    load = Load(server)
    with mysql_conn.cursor() as cur:
        cur.execute(f"DELETE FROM `{mysql_table}`")  # the bad upstream job
    refused = server.admin("refresh")
    assert refused.status_code == 422 and "min_rows: 0 rows" in refused.json()["error"]
    _fill(mysql_conn, mysql_table, 4)  # half-filled: 10 -> 4 rows
    refused = server.admin("refresh")
    assert refused.status_code == 422 and "max_change_ratio" in refused.json()["error"]
    seen = load.finish()
    assert seen and all(s == (200, 10) for s in seen), set(seen)  # never a refused table
    status = server.status()
    assert status["version"] == 1
    valid = _condition(status, "Valid")
    assert valid["status"] == "False" and "max_change_ratio" in valid["message"]
    metrics = server.http.get("/metrics").text
    for check in ("min_rows", "max_change_ratio"):
        line = (
            f'pineapple_resource_validation_failures_total{{check="{check}",resource="feed"}} 1.0'
        )
        assert line in metrics
    assert any("refused (Valid=False)" in line for line in server.log)
    forced = server.admin("refresh", query="?force=1")  # an admin accepts it on purpose
    assert forced.status_code == 200 and forced.json()["result"] == "swapped"
    assert len(server.items()) == 4
    assert _condition(server.status(), "Valid")["reason"] == "Forced"
    assert any("validators overridden" in line for line in server.log)


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
    server = serve(_config(resource, {"type_name": "recall_resource", "resource_name": "feed"}))
    assert server.items() == [{"id": 1, "score": 0.5}, {"id": 2, "score": 0.7}]
    csv.write_text("id\n1\n2\n3\n")  # a broken export
    refused = server.admin("refresh")
    assert refused.status_code == 422
    assert "required_columns: row 0 has no column(s) ['score']" in refused.json()["error"]
    assert server.items() == [{"id": 1, "score": 0.5}, {"id": 2, "score": 0.7}]
    assert _condition(server.status(), "Valid")["status"] == "False"


def test_rollback_serves_the_previous_rows_without_touching_the_database(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 5, score=1.0)
    server = serve(_feed_config(mysql_dsn, mysql_table, keep_previous=True))
    with mysql_conn.cursor() as cur:
        cur.execute(f"UPDATE `{mysql_table}` SET score = -1")  # bad, but valid
    assert server.admin("refresh").json()["result"] == "swapped"
    assert {item["score"] for item in server.items()} == {-1.0}
    assert server.status()["has_previous"]
    with mysql_conn.cursor() as cur:
        cur.execute(f"DROP TABLE `{mysql_table}`")  # any read of the database would now fail
    done = _admin_cli(server, "rollback", "feed")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["result"] == "rolled_back"
    assert [item["score"] for item in server.items()] == [1.0] * 5
    status = server.status()
    assert _condition(status, "Pinned")["status"] == "True"  # or the next refresh undoes it
    assert status["last_error"] is None and status["version"] == 3
    again = _admin_cli(server, "rollback", "feed")
    assert again.returncode == 1 and "no previous value" in again.stderr


def _wait_until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():  # bounded by the deadline
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_pinned_resource_ignores_a_source_change_until_unpinned(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed, probe = tmp_path / "feed.json", tmp_path / "probe.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    probe.write_text("[]")

    def file_resource(path: Path) -> dict[str, Any]:
        return {"type": "json_file", "interval": 1, "params": {"path": str(path)}}

    config = _config(file_resource(feed), {"type_name": "recall_resource", "resource_name": "feed"})
    config["resource_config"]["probe"] = file_resource(probe)  # its timed refreshes show ticks
    server = serve(config)
    pinned = _admin_cli(server, "pin", "feed")
    assert pinned.returncode == 0, pinned.stderr
    feed.write_text('[{"id": 2, "score": 2.0}]')
    ticks = server.status("probe")["last_attempt_at"]
    _wait_until(  # two timed refreshes of the unpinned probe: feed's timer ran too
        "two probe refreshes",
        lambda: server.status("probe")["last_attempt_at"] >= ticks + 1.5,
    )
    assert server.items() == [{"id": 1, "score": 1.0}]
    conflict = server.admin("refresh")
    assert conflict.status_code == 409 and "'feed' is pinned" in conflict.json()["error"]
    assert _admin_cli(server, "unpin", "feed").returncode == 0
    _wait_until("the timed refresh after unpin", lambda: server.status()["version"] == 2)
    assert server.items() == [{"id": 2, "score": 2.0}]
    assert _condition(server.status(), "Pinned")["status"] == "False"


def test_a_table_over_the_memory_budget_is_refused_and_the_old_one_kept(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    budget = 200_000  # a 10-row table is a few KiB; 5,000 more rows are far more
    server = serve(
        _feed_config(mysql_dsn, mysql_table), "--resource-memory-budget-bytes", str(budget)
    )
    size = server.status()["size_bytes"]
    assert 0 < size < budget
    _fill(mysql_conn, mysql_table, 5000, start=10)
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
