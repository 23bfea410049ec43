"""``--workers 2`` with real processes: config reloads and admin actions are decided once."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..._serve import Serve
from .test_shared_workers import (
    _config,
    _fill,
    _recall,
    _wait_workers,
    serving_two_workers,
)

pytestmark = pytest.mark.e2e

DEADLINE = 20.0  # generous: several Python processes start on a busy 2-core machine
SLOW_INTERVAL = 600  # only the admin calls of a test refresh the table


class Served:
    def __init__(self, server: Serve, db: Path, config: Path, shared: Path) -> None:
        self.server, self.db, self.config, self.shared = server, db, config, shared

    @property
    def url(self) -> str:
        return self.server.url

    def manifest(self) -> dict[str, Any]:
        (store,) = self.shared.iterdir()
        loaded: dict[str, Any] = json.loads((store / "manifest.json").read_bytes())
        return loaded

    def feed_generation(self) -> int:
        """The supervisor's published generation of the feed (one per source read)."""
        (entry,) = [v for k, v in self.manifest().items() if k.startswith("feed_data-")]
        return int(entry["generation"])


def _write(path: Path, data: dict[str, Any]) -> bytes:
    raw = json.dumps(data).encode()
    path.write_bytes(raw)
    return raw


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "feed.db"
    _fill(db, 0, 30)
    config = tmp_path / "pineapple.json"
    data = _config(db)
    data["resource_config"]["feed"]["interval"] = SLOW_INTERVAL
    _write(config, data)
    with serving_two_workers(config, tmp_path) as (server, shared):
        yield Served(server, db, config, shared)


def _each(
    served: Served, pids: set[int], path: str, pid_of: Callable[[dict[str, Any]], int]
) -> dict[int, dict[str, Any]]:
    """``worker pid -> body of GET path``, asking until every wanted worker answered."""
    seen: dict[int, dict[str, Any]] = {}
    end = time.monotonic() + DEADLINE
    # Bounded by DEADLINE; a new connection each time reaches any accepting worker.
    while not pids <= set(seen) and time.monotonic() < end:
        body = httpx.get(f"{served.url}{path}", timeout=10).json()
        seen[pid_of(body)] = body
    assert pids <= set(seen), f"workers {pids - set(seen)} never answered"
    return seen


def _configs(served: Served, pids: set[int]) -> dict[int, dict[str, Any]]:
    return _each(served, pids, "/config", lambda body: int(body["shared"]["pid"]))


def _feeds(served: Served, pids: set[int]) -> dict[int, dict[str, Any]]:
    return _each(served, pids, "/resources/feed", lambda body: int(body["worker"]))


def _until(what: str, done: Callable[[], bool]) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:  # bounded by DEADLINE
        if done():
            return
        time.sleep(0.05)  # polling other processes' state, with a deadline
    raise AssertionError(f"never: {what}")


def _generation(body: dict[str, Any]) -> int:
    """The generation the answering worker maps."""
    found = re.search(r"shared snapshot generation (\d+)", body["status"]["worker"]["summary"])
    assert found, body
    return int(found.group(1))


def _pinned(body: dict[str, Any]) -> bool:
    (cond,) = [c for c in body["status"]["conditions"] if c["type"] == "Pinned"]
    return bool(cond["status"] == "True")


def test_good_edit_reaches_every_worker_and_a_bad_one_none_reported_once(
    served: Served,
) -> None:
    pids = _wait_workers(served.server, 2)
    assert {b["shared"]["config_generation"] for b in _configs(served, pids).values()} == {1}
    data = _config(served.db)
    data["resource_config"]["feed"]["interval"] = SLOW_INTERVAL
    data["pipeline_config"]["operators"]["recall"]["descending"] = False
    good = _write(served.config, data)
    revision = hashlib.sha256(good).hexdigest()[:12]

    def everywhere(generation: int) -> bool:
        bodies = _configs(served, pids).values()
        return {b["shared"]["config_generation"] for b in bodies} == {generation}

    _until("every worker serves config generation 2", lambda: everywhere(2))
    bodies = list(_configs(served, pids).values())
    assert {b["config"]["revision"] for b in bodies} == {revision}
    switched = [b["shared"]["worker_last_reload"]["at"] for b in bodies]
    assert max(switched) - min(switched) < 2.0  # the bound between workers
    assert all(b["shared"]["worker_last_reload"]["trigger"] == "supervisor" for b in bodies)
    # The pod's reload record is the supervisor's, whichever worker answers.
    assert {b["last_reload"]["trigger"] for b in bodies} == {"watch"}

    # Two bad edits in a row: each is refused once, by the supervisor; no worker moves.
    for bad in (b'{"pipeline_config": ', b'{"resource_config": 3}'):
        served.config.write_bytes(bad)
        digest = hashlib.sha256(bad).hexdigest()

        def refused(digest: str = digest) -> bool:
            last = next(iter(_configs(served, pids).values()))["shared"]["supervisor_last_reload"]
            return bool(last["result"] == "error" and last["content_hash"] == digest)

        _until("the supervisor refuses the bad edit", refused)
    bodies = list(_configs(served, pids).values())
    assert {b["shared"]["config_generation"] for b in bodies} == {2}
    assert {b["config"]["revision"] for b in bodies} == {revision}
    log = "".join(served.server.log)
    assert log.count("refused, every worker keeps config generation 2") == 2, log
    assert "cannot build config generation" not in log
    assert "config reload" not in log.replace("config reload (watch) refused", "")

    # An admin reload asked of any worker is the supervisor's: the restored file is accepted.
    _write(served.config, data)
    response = httpx.post(f"{served.url}/admin/reload", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "unchanged"
    response = httpx.post(f"{served.url}/admin/reload?force=1", timeout=30)
    assert response.json()["result"] == "ok", response.text
    assert response.json()["worker"]["config_generation"] == 3  # the answering worker switched
    _until("every worker serves config generation 3", lambda: everywhere(3))


def test_admin_refresh_in_any_worker_reads_the_source_once_for_all(served: Served) -> None:
    pids = _wait_workers(served.server, 2)
    assert {_generation(b) for b in _feeds(served, pids).values()} == {1}
    _fill(served.db, 30, 33)  # the version query's answer changes
    response = httpx.post(f"{served.url}/admin/resources/feed/refresh", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "swapped"
    assert _generation(response.json()) == 2  # the answering worker already maps it
    assert served.feed_generation() == 2  # one read, one publish
    _until(
        "every worker maps generation 2",
        lambda: {_generation(b) for b in _feeds(served, pids).values()} == {2},
    )
    response = httpx.post(f"{served.url}/admin/resources/feed/refresh", timeout=30)
    assert response.json()["result"] == "not_modified", response.text
    assert served.feed_generation() == 2


def test_pins_are_the_supervisors_and_hold_in_every_worker(served: Served) -> None:
    pids = _wait_workers(served.server, 2)
    response = httpx.post(f"{served.url}/admin/resources/feed/pin", timeout=30)
    assert response.status_code == 200, response.text
    assert _pinned(response.json())
    _until(
        "every worker shows feed pinned", lambda: all(map(_pinned, _feeds(served, pids).values()))
    )
    _fill(served.db, 30, 33)
    for _ in range(4):  # whichever worker answers, the supervisor refuses
        response = httpx.post(f"{served.url}/admin/resources/feed/refresh", timeout=30)
        assert response.status_code == 409, response.text
        assert "pinned" in response.json()["error"]
    assert served.feed_generation() == 1
    response = httpx.post(f"{served.url}/admin/resources/feed/rollback", timeout=30)
    assert response.status_code == 409, response.text
    assert "keep_previous is off" in response.json()["error"]  # as in one process
    response = httpx.post(f"{served.url}/admin/resources/feed/pin", timeout=30)
    assert response.status_code == 409, response.text  # one pin for the pod
    assert _pinned({"status": response.json()["resource"]})
    response = httpx.post(f"{served.url}/admin/resources/feed/unpin", timeout=30)
    assert response.json()["result"] == "unpinned", response.text
    _until(
        "no worker shows feed pinned",
        lambda: not any(map(_pinned, _feeds(served, pids).values())),
    )
    response = httpx.post(f"{served.url}/admin/resources/feed/refresh", timeout=30)
    assert response.json()["result"] == "swapped", response.text
    assert served.feed_generation() == 2
    log = "".join(served.server.log)
    assert log.count(": pinned (") == 1 and log.count(": unpinned") == 1, log  # the supervisor's


def test_a_renamed_resource_leaves_the_store_once_every_worker_moved_on(served: Served) -> None:
    pids = _wait_workers(served.server, 2)
    (store,) = served.shared.iterdir()
    (old,) = [k for k in served.manifest() if k.startswith("feed_data-")]
    assert list(store.glob(f"{old}.*"))
    want = _recall(served.server)
    answers: list[list[int]] = []
    stop = threading.Event()

    def in_flight() -> None:  # requests all through the reload, each on a new connection
        while not stop.is_set():  # bounded: the test sets stop within DEADLINE
            answers.append(_recall(served.server))

    client = threading.Thread(target=in_flight)
    client.start()
    try:
        data = _config(served.db)
        feed = data["resource_config"].pop("feed")
        feed["interval"] = SLOW_INTERVAL
        feed["params"]["version_query"] = "SELECT COUNT(*) FROM items WHERE id >= 0"  # a new key
        data["resource_config"]["catalog"] = feed
        data["pipeline_config"]["operators"]["recall"]["resource_name"] = "catalog"
        _write(served.config, data)

        def everywhere() -> bool:
            bodies = _configs(served, pids).values()
            return {b["shared"]["config_generation"] for b in bodies} == {2}

        _until("every worker serves config generation 2", everywhere)
        switched = time.monotonic()
        _until("the dropped entry's files are gone", lambda: not list(store.glob(f"{old}.*")))
        assert time.monotonic() - switched < 5.0  # a sweep every 0.5 s
        count = len(answers)
        _until("requests still flow", lambda: len(answers) > count + 5)
    finally:
        stop.set()
        client.join(DEADLINE)
    assert answers and all(a == want for a in answers)
    manifest = served.manifest()
    assert old not in manifest
    assert [k for k in manifest if k.startswith("feed_data-")] != []
    log = "".join(served.server.log)
    assert "removed 1 shared snapshot(s) no config names any more" in log
    assert "WARNING" not in log and "ERROR" not in log, log
