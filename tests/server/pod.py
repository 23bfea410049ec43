"""A real ``pineapple serve`` with the server tests' plugin, and the tests of both process models.

:func:`serve_plugin` is :class:`tests._serve.Serve` with ``--plugin
tests.server.process_plugin``. :data:`MODES` are one process and ``--workers
2``; the ``serve`` fixture (``conftest.py``) starts a :class:`Server` in each,
so a test written once expects the same answers from both. Every wait is
bounded (``WAIT``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil

from .._serve import Serve, cli_env, run_cli

__all__ = [
    "MODES",
    "PLUGIN",
    "WAIT",
    "Server",
    "admin_cli",
    "children",
    "condition",
    "feed_config",
    "fill",
    "pipeline_config",
    "serve_plugin",
    "unnamed_feed_files",
    "wait_until",
]

PLUGIN = "tests.server.process_plugin"
WAIT = 30.0  # seconds: the bound of every wait below


def serve_plugin(config: Path, close_log: Path, *args: str) -> Serve:
    """``pineapple serve CONFIG --plugin tests.server.process_plugin ARGS...``, listening;
    its ``test_items`` values log their closes to ``close_log``."""
    env = cli_env({"PINEAPPLE_TEST_CLOSE_LOG": str(close_log)})
    return Serve(config, "--plugin", PLUGIN, *args, env=env)


MODES = {"one process": (), "--workers 2": ("--workers", "2")}
"""The process models every test here runs against (``serve``'s params)."""


class Server(Serve):
    """``pineapple serve CONFIG --no-watch`` in a process model, with an HTTP client."""

    def __init__(
        self,
        config: Path,
        *args: str,
        mode: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.supervised = bool(mode)
        self.config = config
        if mode:  # the store under the test's folder, never the machine's /dev/shm
            shared = config.parent / "shm"
            shared.mkdir(exist_ok=True)
            mode = (*mode, "--shared-dir", str(shared))
        super().__init__(config, "--no-watch", *mode, *args, env=cli_env(env))
        self.http = httpx.Client(base_url=self.url, timeout=WAIT)

    def items(self) -> list[dict[str, Any]]:
        response = self.http.post("/execute", content=b'{"common": {}, "items": []}')
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    def stage_decided(self, live: list[str]) -> dict[str, Any]:
        """Send ``/execute`` requests, each answered with the ids ``live`` (a shadow never
        changes a live answer), until the staged candidate is decided; the decision.
        Bounded by ``WAIT``."""
        deadline = time.monotonic() + WAIT
        while True:  # bounded by the deadline
            assert [item["id"] for item in self.items()] == live
            candidate = self.http.get("/config/candidate")
            if candidate.status_code == 404:
                decision: dict[str, Any] = candidate.json()["last_decision"]
                assert decision is not None, candidate.text + self.text()
                return decision
            assert candidate.status_code == 200, candidate.text
            assert time.monotonic() < deadline, f"never decided: {candidate.text}"

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

    def close(self, grace: float = WAIT) -> None:
        super().close(grace)
        if hasattr(self, "http"):
            self.http.close()


def children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def pipeline_config(resource: dict[str, Any], operator: dict[str, Any]) -> dict[str, Any]:
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


def feed_config(dsn: str, table: str, interval: float = -1, **entry: Any) -> dict[str, Any]:
    params = {"mysql_dsn": dsn, "table": table, "order_columns": ["id"], "loader": "thread"}
    resource = {"type": "feed_data", "interval": interval, "params": params, **entry}
    operator = {
        "type_name": "recall_feed_data",
        "resource_name": "feed",
        "order_by": "id",
        "default_size": 100_000,
        "max_size": 100_000,
    }
    return pipeline_config(resource, operator)


def fill(conn: Any, table: str, n: int, score: float = 1.0, start: int = 0) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE IF NOT EXISTS `{table}` (id INT PRIMARY KEY, score DOUBLE)")
        cur.executemany(
            f"INSERT INTO `{table}` VALUES (%s, %s)",
            [(i, score) for i in range(start, start + n)],
        )


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    cond: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == kind)
    return cond


def admin_cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("admin", *args, "--addr", server.addr, timeout=WAIT)


def wait_until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():  # bounded by the deadline
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def unnamed_feed_files(shared: Path) -> list[str]:
    """The json_file snapshot files in the pod's store that its manifest does not name."""
    (store,) = shared.glob("pineapple-*")
    manifest = orjson.loads((store / "manifest.json").read_bytes())
    named = {
        name
        for key, entry in manifest.items()
        if not key.startswith("_")
        for name in entry["files"]
    }
    return sorted(p.name for p in store.glob("json_file-*") if p.name not in named)
