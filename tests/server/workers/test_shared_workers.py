"""``pineapple serve --workers 2`` with real processes: one loader, shared snapshots."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from ..._serve import Serve
from ..pod import serve_plugin

pytestmark = pytest.mark.e2e

DEADLINE = 20.0  # generous: several Python processes start on a busy 2-core machine


def _config(db: Path) -> dict[str, Any]:
    outputs = ["id", "title"]
    return {
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "interval": 1,
                "params": {
                    "sqlite_path": str(db),
                    "table": "items",
                    "index_columns": ["cat"],
                    "order_columns": ["score"],
                    "version_query": "SELECT COUNT(*) FROM items",
                },
            }
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "match": {"cat": "cat"},
                    "order_by": "score",
                    "descending": True,
                    "$metadata": {
                        "common_input": ["cat"],
                        "common_output": [],
                        "item_input": [],
                        "item_output": outputs,
                    },
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": ["cat"],
            "item_input": [],
            "common_output": [],
            "item_output": outputs,
        },
    }


def _fill(db: Path, start: int, stop: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS items "
            "(id INTEGER PRIMARY KEY, cat TEXT, score REAL, title TEXT)"
        )
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?, ?)",
            [(i, f"c{i % 3}", i / 10, f"t{i}") for i in range(start, stop)],
        )
    conn.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Serve, Path, Path]]:
    db = tmp_path / "feed.db"
    _fill(db, 0, 30)
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(_config(db)))
    with serving_two_workers(config, tmp_path) as (server, shared):
        yield server, db, shared


@contextlib.contextmanager
def serving_two_workers(config: Path, tmp_path: Path, *args: str) -> Iterator[tuple[Serve, Path]]:
    """``pineapple serve CONFIG --workers 2 ARGS...`` with its store in ``tmp_path/shm``;
    closed on exit (which kills every worker it had)."""
    shared = tmp_path / "shm"
    shared.mkdir()
    args = ("--workers", "2", "--shared-dir", str(shared), *args)
    with serve_plugin(config, tmp_path / "closes.log", *args) as server:
        yield server, shared


def _generations(server: Serve, want_pids: set[int]) -> dict[int, int]:
    """``worker pid -> served shared generation``, asking until every wanted worker answered."""
    seen: dict[int, int] = {}
    end = time.monotonic() + DEADLINE
    while not want_pids <= set(seen) and time.monotonic() < end:
        # A new connection each time: the kernel hands it to any worker accepting.
        body = httpx.get(f"{server.url}/resources/feed", timeout=10).json()
        # What this worker maps (the rest of the status is the supervisor's).
        found = re.search(r"shared snapshot generation (\d+)", body["status"]["worker"]["summary"])
        assert found, body
        seen[body["worker"]] = int(found.group(1))
    assert want_pids <= set(seen), f"workers {want_pids - set(seen)} never answered"
    return seen


def _wait_everywhere(server: Serve, pids: set[int], generation: int) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if set(_generations(server, pids).values()) == {generation}:
            return
    raise AssertionError(f"not every worker reached generation {generation}")


def _recall(server: Serve) -> list[int]:
    body = {"common": {"cat": "c1"}, "items": []}
    response = httpx.post(f"{server.url}/execute", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def _wait_workers(server: Serve, count: int) -> set[int]:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        pids = {p.pid for p in server.workers()}
        if len(pids) == count:
            return pids
        time.sleep(0.05)  # polling another process's state, with a deadline
    raise AssertionError(f"never {count} workers")


def test_refresh_reaches_every_worker_and_a_failed_one_publishes_nothing(
    served: tuple[Serve, Path, Path],
) -> None:
    server, db, shared = served
    pids = _wait_workers(server, 2)
    assert set(_generations(server, pids).values()) == {1}
    _fill(db, 30, 33)  # the version query's answer changes: the supervisor publishes once
    _wait_everywhere(server, pids, 2)
    assert 31 in _recall(server)
    (store,) = shared.iterdir()
    # The previous generation's files are unlinked once the new one is published.
    assert sorted(p.name for p in store.iterdir() if ".1." in p.name) == []
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE items RENAME TO gone")  # every refresh now fails
    conn.close()
    # Two refreshes fail (the supervisor logs each, counted; one resource refreshes one at a
    # time, so the first had done all it would before the second began): none published.
    server.wait_line(r"refresh of \S+/feed failed \(2 in a row", DEADLINE)
    assert set(_generations(server, pids).values()) == {2}
    assert 31 in _recall(server)
    assert server.stop() == 0
    assert not store.exists()  # the supervisor removes its snapshot directory at exit


def test_killed_worker_is_replaced_and_serves_without_reading_the_source(
    served: tuple[Serve, Path, Path],
) -> None:
    server, db, _ = served
    pids = _wait_workers(server, 2)
    want = _recall(server)
    db.unlink()  # any read of the source from now on fails
    victim = min(pids)
    os.kill(victim, signal.SIGKILL)
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        now = {p.pid for p in server.workers()}
        if len(now) == 2 and victim not in now:
            break
        time.sleep(0.05)  # polling another process's state, with a deadline
    else:
        raise AssertionError("the killed worker was not replaced")
    replacement = (now - pids).pop()
    assert _generations(server, {replacement})[replacement] == 1
    for _ in range(10):
        assert _recall(server) == want
    assert "ERROR" not in "".join(line for line in server.log if "exited with" not in line)


def test_supervisor_killed_leaves_no_worker_running(
    served: tuple[Serve, Path, Path],
) -> None:
    server, _, _ = served
    _wait_workers(server, 2)
    workers = server.workers()
    server.proc.kill()
    _, alive = psutil.wait_procs(workers, timeout=DEADLINE)
    assert alive == [], f"workers still running: {[p.pid for p in alive]}"
