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

import contextlib
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
import psutil
import pymysql
import pytest

from .._serve import LISTENING

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from pineapple.cli import main; sys.exit(main())"
WAIT = 30.0  # seconds: the bound of every wait below
SERVE_ARGS = ("--addr", "127.0.0.1:0", "--no-watch")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PINEAPPLE_ADMIN_TOKEN", None)
    return env


MODES = {"one process": (), "--workers 2": ("--workers", "2")}
"""The process models every test here runs against (``serve``'s params)."""


class Server:
    """``pineapple serve CONFIG`` on a free loopback port; killed by ``close``."""

    def __init__(
        self,
        config: Path,
        *args: str,
        mode: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.workers = bool(mode)
        self.config = config
        if mode:  # the store under the test's folder, never the machine's /dev/shm
            shared = config.parent / "shm"
            shared.mkdir(exist_ok=True)
            mode = (*mode, "--shared-dir", str(shared))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", str(config), *SERVE_ARGS, *mode, *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**_env(), **(env or {})},
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

    def items_become(self, want: list[dict[str, Any]]) -> None:
        """Wait until ``/execute`` serves ``want`` (another worker maps an admin's result
        within its follow poll; one process at once). Bounded by ``WAIT``."""
        deadline = time.monotonic() + WAIT
        while (got := self.items()) != want:
            assert time.monotonic() < deadline, f"served {got}, never {want}"
            time.sleep(0.05)  # polling what other processes serve, with a deadline

    def status_anywhere(self, name: str = "feed") -> dict[str, Any]:
        """The status from a new connection (with workers: whichever worker accepts it)."""
        body: dict[str, Any] = httpx.get(f"{self.url}/resources/{name}", timeout=WAIT).json()
        return dict(body["status"])

    def reload(self, config: dict[str, Any]) -> httpx.Response:
        """Write ``config`` and ask for a reload (the server does not watch)."""
        self.config.write_bytes(orjson.dumps(config))
        return self.http.post("/admin/reload")

    def status(self, name: str = "feed") -> dict[str, Any]:
        status: dict[str, Any] = self.http.get(f"/resources/{name}").json()["status"]
        return status

    def admin(self, action: str, name: str = "feed", query: str = "") -> httpx.Response:
        return self.http.post(f"/admin/resources/{name}/{action}{query}")

    def close(self) -> None:
        children = _children(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for child in children:  # no worker may outlive its test (or hold the log pipe)
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self._drain.join(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        if hasattr(self, "http"):
            self.http.close()


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.fixture(params=list(MODES))
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start ``pineapple serve`` on a config, in one process or with ``--workers 2``."""
    started: list[Server] = []
    mode = MODES[request.param]

    def start(config: dict[str, Any], *args: str, env: dict[str, str] | None = None) -> Server:
        path = tmp_path / "pineapple.json"
        path.write_bytes(orjson.dumps(config))
        server = Server(path, *args, mode=mode, env=env)
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
    if not server.workers:  # the supervisor's refusals are not in a worker's /metrics yet
        metrics = server.http.get("/metrics").text
        for check in ("min_rows", "max_change_ratio"):
            family = "pineapple_resource_validation_failures_total"
            assert f'{family}{{check="{check}",resource="feed"}} 1.0' in metrics
    assert sum("refused (Valid=False)" in line for line in server.log) == 2  # once each
    forced = server.admin("refresh", query="?force=1")  # an admin accepts it on purpose
    assert forced.status_code == 200 and forced.json()["result"] == "swapped"
    server.items_become([{"id": i, "score": 1.0} for i in range(4)])
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
    server.items_become([{"id": i, "score": 1.0} for i in range(5)])
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
    server.items_become([{"id": 2, "score": 2.0}])
    assert _condition(server.status(), "Pinned")["status"] == "False"


def test_a_table_over_the_memory_budget_is_refused_and_the_old_one_kept(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    # A 10-row table is a few KiB; 20,000 more rows are far more, both in one process's
    # heap and as the Arrow snapshot workers map.
    budget = 200_000
    server = serve(
        _feed_config(mysql_dsn, mysql_table), "--resource-memory-budget-bytes", str(budget)
    )
    size = server.status()["size_bytes"]
    assert 0 < size < budget
    _fill(mysql_conn, mysql_table, 20_000, start=10)
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


def _same_view(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two statuses of one resource say the same (times of observation aside)."""
    keys = ("name", "version", "last_error", "consecutive_failures", "last_attempt_at")
    conditions = [[(c["type"], c["status"], c["reason"]) for c in s["conditions"]] for s in (a, b)]
    return all(a[k] == b[k] for k in keys) and conditions[0] == conditions[1]


def test_a_broken_source_shows_in_every_status_and_the_admin_answer_matches(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    server = serve(_feed_config(mysql_dsn, mysql_table))
    gone = f"{mysql_table}_gone"
    with mysql_conn.cursor() as cur:
        cur.execute(f"RENAME TABLE `{mysql_table}` TO `{gone}`")
    try:
        failed = server.admin("refresh")
        assert failed.status_code == 502, failed.text
        assert "refresh of resource 'feed' failed" in failed.json()["error"]
        answered = failed.json()["resource"]
        assert mysql_table in answered["last_error"]
        assert answered["consecutive_failures"] == 1
        assert _condition(answered, "Ready")["status"] == "True"  # the last good rows serve
        for _ in range(6):  # new connections: with workers, any of them answers
            assert _same_view(server.status_anywhere(), answered)
        listed = httpx.get(f"{server.url}/resources", timeout=WAIT).json()["resources"]
        assert _same_view(listed[0], answered)
        ready = httpx.get(f"{server.url}/readyz", timeout=WAIT)
        assert ready.status_code == 200, ready.text  # values serve; refreshes still run
        assert len(server.items()) == 10
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{gone}`")


@contextlib.contextmanager
def _table_statistics(conn: Any) -> Iterator[Callable[[str], int]]:
    """``rows_read(table)``: MariaDB's own count of the rows read from ``table``
    (``information_schema.TABLE_STATISTICS``, on while the block runs)."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@userstat")
        (was,) = cur.fetchone()
        cur.execute("SET GLOBAL userstat = 1")

    def rows_read(table: str) -> int:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT ROWS_READ FROM information_schema.TABLE_STATISTICS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
                (table,),
            )
            row = cur.fetchone()
        return 0 if row is None else int(row[0])

    try:
        yield rows_read
    finally:
        with conn.cursor() as cur:
            cur.execute(f"SET GLOBAL userstat = {int(was)}")


def test_a_reload_that_keeps_a_version_query_entry_reads_none_of_its_table(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    version = f"{mysql_table}_v"
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{version}` (v INT)")
        cur.execute(f"INSERT INTO `{version}` VALUES (1)")
    config = _feed_config(mysql_dsn, mysql_table, interval=600)
    config["resource_config"]["feed"]["params"]["version_query"] = f"SELECT v FROM `{version}`"
    try:
        with _table_statistics(mysql_conn) as rows_read:
            before = rows_read(mysql_table)
            server = serve(config)
            assert rows_read(mysql_table) - before == 10  # one full read, whatever the mode
            config["pipeline_config"]["operators"]["recall"]["max_size"] = 99_999
            reloaded = server.reload(config)  # the feed entry is unchanged
            assert reloaded.json()["result"] == "ok", reloaded.text
            assert server.admin("refresh").json()["result"] == "not_modified"
            assert rows_read(mysql_table) - before == 10  # the reload read none of it
            with mysql_conn.cursor() as cur:
                cur.execute(f"UPDATE `{version}` SET v = 2")
            assert server.admin("refresh").json()["result"] == "swapped"
            assert rows_read(mysql_table) - before == 20  # a new version: one read
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{version}`")


def _pins_logged(server: Server) -> int:
    return sum("json_file/feed: pinned (" in line for line in server.log)


def test_one_pin_for_the_pod_and_a_changed_entry_drops_it(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    config = _config(resource, {"type_name": "recall_resource", "resource_name": "feed"})
    server = serve(config)
    assert server.admin("pin").status_code == 200
    second = server.admin("pin")
    assert second.status_code == 409, second.text
    assert "'feed' is pinned (pinned by an admin at" in second.json()["error"]
    assert _condition(second.json()["resource"], "Pinned")["status"] == "True"
    _wait_until("the pin is logged", lambda: _pins_logged(server) >= 1)
    # A reload that keeps the entry keeps the pin.
    config["pipeline_config"]["operators"]["recall"]["$metadata"]["common_output"] = []
    config["_PINEAPPLE_VERSION"] = 2
    assert server.reload(config).json()["result"] == "ok"
    assert _condition(server.status_anywhere(), "Pinned")["status"] == "True"
    # A change of the entry (its interval only) is a new resource: unpinned, as documented.
    config["resource_config"]["feed"]["interval"] = 300
    assert server.reload(config).json()["result"] == "ok"
    for _ in range(4):
        status = server.status_anywhere()
        assert _condition(status, "Pinned")["status"] == "False", status
    assert server.admin("pin").status_code == 200
    _wait_until("the second pin is logged", lambda: _pins_logged(server) >= 2)
    assert _pins_logged(server) == 2  # one line per pin, whatever the process model


def test_a_first_value_refused_at_start_says_that_nothing_serves(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    config = _feed_config(
        mysql_dsn, mysql_table, validate={"max_change_ratio": 0.1, "min_rows": 50}
    )
    with pytest.raises(AssertionError, match="serve exited before listening") as caught:
        serve(config)
    text = str(caught.value)
    assert "new value refused by min_rows: 10 rows, fewer than min_rows 50" in text
    assert "(no value is loaded yet)" in text
    assert "previous value keeps serving" not in text


def test_admin_routes_need_the_token_and_never_show_it(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    config = _config(resource, {"type_name": "recall_resource", "resource_name": "feed"})
    token = "s3cret-admin-token"
    server = serve(config, env={"PINEAPPLE_ADMIN_TOKEN": token})
    for path in ("/admin/reload", "/admin/resources/feed/pin"):
        refused = server.http.post(path)
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
    wrong = server.http.post("/admin/resources/feed/pin", headers={"authorization": "Bearer x"})
    assert wrong.status_code == 401
    allowed = {"authorization": f"Bearer {token}"}
    pinned = server.http.post("/admin/resources/feed/pin", headers=allowed)
    assert pinned.status_code == 200 and pinned.json()["result"] == "pinned"
    reloaded = server.http.post("/admin/reload", headers=allowed)
    assert reloaded.json()["result"] == "unchanged", reloaded.text
    assert token not in "".join(server.log)


def _waiting_for_lock(conn: Any, table: str) -> bool:
    """Whether a query on ``table`` waits for its table lock (the loader's fetch)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE INFO LIKE %s AND STATE LIKE %s",
            (f"%{table}%", "Waiting for table%"),
        )
        (waiting,) = cur.fetchone()
    return bool(waiting)


def _items_anywhere(server: Server) -> list[dict[str, Any]]:
    """``/execute`` on a new connection (with workers: whichever worker accepts it)."""
    response = httpx.post(f"{server.url}/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def test_a_pin_that_lands_while_the_source_is_read_wins_everywhere(
    serve: Callable[..., Server],
    mysql_conn: Any,
    mysql_params: dict[str, Any],
    mysql_dsn: str,
    mysql_table: str,
) -> None:
    _fill(mysql_conn, mysql_table, 10)
    server = serve(_feed_config(mysql_dsn, mysql_table))
    want = server.items()
    _fill(mysql_conn, mysql_table, 20, start=10)  # what the refresh will read
    locker = pymysql.connect(autocommit=True, **mysql_params)
    answers: list[httpx.Response] = []

    def refresh() -> None:
        answers.append(httpx.post(f"{server.url}/admin/resources/feed/refresh", timeout=WAIT))

    fetch = threading.Thread(target=refresh)
    try:
        with locker.cursor() as cur:
            cur.execute(f"LOCK TABLES `{mysql_table}` WRITE")  # the read waits for it
        fetch.start()
        _wait_until(
            "the refresh reads the table", lambda: _waiting_for_lock(mysql_conn, mysql_table)
        )
        pinned = httpx.post(f"{server.url}/admin/resources/feed/pin", timeout=WAIT)
        assert pinned.status_code == 200, pinned.text
    finally:
        with locker.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        locker.close()
        fetch.join(WAIT)
    assert not fetch.is_alive() and answers[0].status_code == 200, answers
    assert answers[0].json()["result"] == "not_modified"  # the pin won: nothing swapped
    status = server.status_anywhere()
    assert status["version"] == 1 and _condition(status, "Pinned")["status"] == "True"
    if server.workers:  # a worker started now maps what the pod serves, not the dropped read
        victim = min(p.pid for p in _children(server.proc.pid) if "spawn" in " ".join(p.cmdline()))
        os.kill(victim, signal.SIGKILL)
        _wait_until(
            "a replacement worker",
            lambda: (
                victim not in {p.pid for p in _children(server.proc.pid)}
                and len([p for p in _children(server.proc.pid) if p.is_running()]) >= 2
            ),
        )
    for _ in range(8):  # new connections: every process serves the pinned rows
        assert _items_anywhere(server) == want


def test_a_bad_reload_is_refused_once_and_the_served_config_stays(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    config = _config(resource, {"type_name": "recall_resource", "resource_name": "feed"})
    server = serve(config)
    before = server.http.get("/config").json()
    bad = dict(config, pipeline_config={"operators": {"x": {"type_name": "no_such_operator"}}})
    refused = server.reload(bad)
    assert refused.status_code == 422, refused.text
    assert (refused.json()["result"], refused.json()["step"]) == ("error", "engine")
    for _ in range(4):  # new connections: with workers, any of them answers
        body = httpx.get(f"{server.url}/config", timeout=WAIT).json()
        assert body["config"]["content_hash"] == before["config"]["content_hash"]
        assert body["last_reload"]["result"] == "error"
        assert body["last_reload_error"]["step"] == "engine"
        assert body["reload_attempts"] == before["reload_attempts"] + 1
    assert server.items() == [{"id": 1, "score": 1.0}]
    assert sum("config reload (admin)" in line for line in server.log) == 1  # logged once
    restored = server.reload(config)
    assert restored.json()["result"] == "unchanged", restored.text
    ready = httpx.get(f"{server.url}/readyz", timeout=WAIT)
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
