"""What an operator reads from a real ``pineapple serve``: JSON lines, the access log,
swap/failure/recovery lines, and condition times dated at the change.

One parametrised fixture starts the server in one process and with ``--workers 2``
(``--log-format json --access-log``); every test expects the same answers of both.
The data is a ``json_file`` whose folder comes from ``${OPS_FEED_DIR}``: a ``${VAR}``
value is a secret, so the folder's name must never show in any line.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .._serve import Serve
from .pod import serve_plugin
from .workers.test_shared_workers import serving_two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

DEADLINE = 30.0  # several Python processes start on a busy 2-core machine
FIELDS = {"time", "level", "logger", "message", "pid"}


def _items(count: int) -> str:
    return json.dumps([{"id": f"i{n}", "tag": "ops"} for n in range(count)])


def _config(feed: str) -> dict[str, Any]:
    meta = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id"]}
    return {
        "resource_config": {
            "feed": {"type": "json_file", "interval": -1, "params": {"path": feed}},
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_resource",
                    "resource_name": "feed",
                    "$metadata": meta,
                }
            },
            "pipeline_map": {},
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id"],
        },
    }


class Served:
    """A running server, its data file, and its log read as JSON lines."""

    def __init__(self, server: Serve, feed: Path, secret: str) -> None:
        self.server = server
        self.feed = feed
        self.secret = secret
        self.url = server.url

    def lines(self) -> list[dict[str, Any]]:
        """Every log line so far, each parsed (a line that is not JSON fails the test)."""
        parsed = []
        for line in list(self.server.log):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                pytest.fail(f"not a JSON line: {line!r}")
            assert isinstance(record, dict) and set(record) >= FIELDS, line
            parsed.append(record)
        return parsed

    def wait_line(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first log line ``match`` accepts, waiting for it until ``DEADLINE``."""
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            found = [r for r in self.lines() if match(r)]
            if found:
                return found[0]
            time.sleep(0.05)  # polling another process's log, with a deadline
        raise AssertionError("no such log line in:\n" + "".join(self.server.log))

    def admin(self, path: str) -> httpx.Response:
        return httpx.post(f"{self.url}/admin/resources/feed/{path}", timeout=30)


@pytest.fixture(params=[1, 2], ids=["one-process", "workers-2"])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    secret = f"ops-s3cr3t-{uuid.uuid4().hex[:8]}"
    folder = tmp_path / secret
    folder.mkdir()
    feed = folder / "feed.json"
    feed.write_text(_items(2))
    monkeypatch.setenv("OPS_FEED_DIR", str(folder))
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(_config("${OPS_FEED_DIR}/feed.json")))
    flags = ("--log-format", "json", "--access-log")
    if request.param == 1:
        with serve_plugin(config, tmp_path / "closes.log", *flags) as server:
            yield Served(server, feed, secret)
    else:
        with serving_two_workers(config, tmp_path, *flags) as (server, _shared):
            yield Served(server, feed, secret)


def _own(served: Served) -> Callable[[dict[str, Any]], bool]:
    """Lines of the process that fetches data: the only one, or the supervisor."""
    pid = served.server.proc.pid
    return lambda r: r["pid"] == pid


def test_every_process_writes_json_lines_and_the_access_log_has_no_query(
    served: Served, request: pytest.FixtureRequest
) -> None:
    assert httpx.get(f"{served.url}/healthz?token=hunter2", timeout=10).status_code == 200
    answer = httpx.post(f"{served.url}/execute", content=b'{"common": {}, "items": []}')
    assert answer.status_code == 200, answer.text
    access = served.wait_line(
        lambda r: r["logger"] == "pineapple.access" and r.get("path") == "/healthz"
    )
    assert access["method"] == "GET" and access["status"] == 200 and access["level"] == "INFO"
    assert 0 <= access["duration_ms"] < 10_000
    assert access["message"].endswith(
        f'"GET /healthz" 200 {access["duration_ms"]:.1f}ms id={access["request_id"]}'
    )
    execute = served.wait_line(lambda r: r.get("path") == "/execute")
    assert (execute["method"], execute["status"]) == ("POST", 200)
    assert execute["request_id"] != access["request_id"]
    assert len(execute["config_revision"]) == 12 and isinstance(execute["resources"], list)
    # Every process writes the format: the supervisor and both workers with --workers 2
    # (a worker's first lines may come after the first one listens: wait for them; a trial
    # build's process writes the format too).
    expected = 1 if request.node.callspec.params["served"] == 1 else 3
    served.wait_line(lambda r: len({x["pid"] for x in served.lines()}) >= expected)
    lines = served.lines()
    pids = {r["pid"] for r in lines}
    assert len(pids) == 1 if expected == 1 else len(pids) >= expected
    log = "".join(served.server.log)
    assert "hunter2" not in log and "token=" not in log
    assert served.secret not in log


def test_a_failed_refresh_warns_and_the_recovery_and_the_swap_are_logged(
    served: Served,
) -> None:
    loaded = served.wait_line(lambda r: _own(served)(r) and r.get("resource") == "feed")
    assert loaded["version"] == 1 and loaded["level"] == "INFO"
    served.feed.write_text("[{broken")  # the source breaks
    answer = served.admin("refresh")
    assert answer.status_code == 502, answer.text
    failed = served.wait_line(lambda r: _own(served)(r) and "refresh of" in r["message"])
    assert failed["level"] == "WARNING" and failed["logger"] == "pineapple.resource"
    assert "json_file/feed failed (1 in a row, keeping the previous value)" in failed["message"]
    served.feed.write_text(_items(3))  # and is fixed
    answer = served.admin("refresh")
    assert answer.status_code == 200, answer.text
    recovered = served.wait_line(lambda r: _own(served)(r) and "recovered" in r["message"])
    assert recovered["message"] == "json_file/feed: recovered after 1 failed refresh(es)"
    assert (recovered["resource"], recovered["failures"]) == ("feed", 1)
    swap = served.wait_line(lambda r: _own(served)(r) and r.get("version") == 2)
    assert swap["level"] == "INFO" and swap["resource"] == "feed"
    assert swap["message"] == f"json_file/feed: swapped in version 2: {swap['summary']}"
    assert "3 " in swap["summary"]  # "3 rows" or the shared snapshot's "3 entries"
    own_swaps = [r for r in served.lines() if _own(served)(r) and r.get("resource") == "feed"]
    assert [r["version"] for r in own_swaps if "swapped" in r["message"]] == [1, 2]
    assert served.secret not in "".join(served.server.log)


def test_condition_times_are_the_moments_of_their_changes(served: Served) -> None:
    status = httpx.get(f"{served.url}/resources/feed", timeout=10).json()["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    # Dated at the swap that loaded the value (the same clock read), not at this read.
    assert ready["status"] == "True" and ready["last_transition_time"] == status["loaded_at"]
    before = time.time()
    assert served.admin("pin").status_code == 200
    after = time.time()
    time.sleep(1.5)  # the read comes well after the change: its time must not move
    read_at = time.time()
    body = httpx.get(f"{served.url}/resources/feed", timeout=10).json()
    pinned = next(c for c in body["status"]["conditions"] if c["type"] == "Pinned")
    assert pinned["status"] == "True"
    assert before - 0.05 <= pinned["last_transition_time"] <= after + 0.5 < read_at
