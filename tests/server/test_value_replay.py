"""Warm-up replay of a refreshed resource value (``"replay": true``), on a real server.

A json_file feed whose entry opts in feeds a Lua transform that fails on an item
without ``score``. After live traffic, the file loses the field: the refreshed value
answers the sample first, fails it, and is refused like a validator refusal (the
old value keeps serving; ``Valid=False`` names the replay, the first error and its
operator). A value that answers is swapped in as before.

Both process models, with the same expectations: under ``--workers 2`` the feed (a
json_file has a codec) is fetched by the supervisor, which has no engine; a trial
process replays the pod's sample with the staged value instead
(``server/workers/supervisor/_value_trial.py``), and a refused value is never
published, so every worker keeps the old one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .pod import Server, condition, unnamed_feed_files

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

_LUA = 'if score == nil then error("item " .. id .. " has no score") end\nreturn score * 2'


def _config(feed: Path) -> dict[str, Any]:
    def meta(item_input: list[str], item_output: list[str]) -> dict[str, Any]:
        return {
            "common_input": [],
            "common_output": [],
            "item_input": item_input,
            "item_output": item_output,
        }

    operators = {
        "recall": {
            "type_name": "recall_resource",
            "resource_name": "feed",
            "$metadata": meta([], ["id", "score"]),
        },
        "lua": {
            "type_name": "transform_by_lua",
            "lua_script": f"function f()\n{_LUA}\nend",
            "function_for_item": "f",
            "$metadata": meta(["id", "score"], ["double"]),
        },
    }
    entry = {"type": "json_file", "interval": 600, "replay": True, "params": {"path": str(feed)}}
    return {
        "_PINEAPPLE_VERSION": 1,
        "resource_config": {"feed": entry},
        "pipeline_config": {"operators": operators},
        "pipeline_group": {"main": {"pipeline": ["recall", "lua"]}},
        "flow_contract": meta([], ["id", "double"]),
    }


def _served_anywhere(server: Server, connections: int = 6) -> list[list[dict[str, Any]]]:
    """What ``/execute`` answers from ``connections`` new connections (with workers: whichever
    worker accepts each)."""
    answers = []
    for _ in range(connections):
        response = httpx.post(f"{server.url}/execute", content=b'{"common": {}, "items": []}')
        assert response.status_code == 200, response.text
        answers.append(response.json()["items"])
    return answers


def _answered(server: Server, times: int = 5) -> list[dict[str, Any]]:
    """Live traffic (kept in the sample: spaced past its one-per-millisecond rate)."""
    items: list[dict[str, Any]] = []
    for _ in range(times):
        items = server.items()
        time.sleep(0.003)
    return items


def test_a_refreshed_value_failing_the_replay_is_refused_and_the_old_one_serves(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps([{"id": 1, "score": 1.0}]))
    server = serve(_config(feed))
    assert _answered(server) == [{"id": 1, "double": 2.0}]

    feed.write_bytes(orjson.dumps([{"id": 1, "score": 1.0}, {"id": 2}]))  # no score
    refused = server.admin("refresh")
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    missing = 'required field "score" is missing on item[1]'
    assert error.startswith("resource 'feed': new value refused by replay: "), error
    assert "failed 5 of 5 replayed requests (status 500 in operator 'lua')" in error, error
    assert missing in error, error
    valid = condition(server.status(), "Valid")
    assert valid["status"] == "False", valid
    assert "refused by replay" in valid["message"] and missing in valid["message"], valid
    assert _answered(server, 1) == [{"id": 1, "double": 2.0}]  # the old value serves
    assert _served_anywhere(server) == [[{"id": 1, "double": 2.0}]] * 6  # on every worker
    assert server.count(r"feed: swapped in version 2") == 0  # in no process
    assert "refused by replay" in condition(server.status_anywhere(), "Valid")["message"]
    if server.supervised:  # the supervisor's trial replayed it; its staged files are gone
        assert server.count(r"trial \(pid \d+\): failed") == 1, server.text()
        assert unnamed_feed_files(tmp_path / "shm") == []

    feed.write_bytes(orjson.dumps([{"id": 3, "score": 2.0}]))  # answers: swapped in
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become([{"id": 3, "double": 4.0}])
    assert condition(server.status(), "Valid")["status"] == "True"
    for pid in _serving_pids(server):  # each worker maps it within its follow poll
        server.wait_line(rf" {pid} INFO pineapple\.resource: json_file/feed: swapped in version 2")
    assert _served_anywhere(server) == [[{"id": 3, "double": 4.0}]] * 6
    if server.supervised:
        assert server.count(r"trial \(pid \d+\): passed") == 1, server.text()
        assert unnamed_feed_files(tmp_path / "shm") == []


def _serving_pids(server: Server) -> set[str]:
    """The pids of the processes that serve (one process, or each worker) from their log."""
    found = (re.search(r" (\d+) INFO .*listening on", line) for line in list(server.log))
    pids = {m.group(1) for m in found if m}
    assert len(pids) == (2 if server.supervised else 1), server.text()
    return pids


def test_with_the_replay_off_a_refreshed_value_swaps_unreplayed(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps([{"id": 1, "score": 1.0}]))
    server = serve(_config(feed), "--replay-seconds", "0")
    assert _answered(server) == [{"id": 1, "double": 2.0}]

    feed.write_bytes(orjson.dumps([{"id": 2}]))  # would fail the replay: none runs
    assert server.admin("refresh").json()["result"] == "swapped"
    assert condition(server.status(), "Valid")["status"] == "True"
    assert server.count(r"trial \(pid \d+\)") == 0, server.text()
