"""Warm-up replay of a refreshed resource value (``"replay": true``), on a real server.

A json_file feed whose entry opts in feeds a Lua transform that fails on an item
without ``score``. After live traffic, the file loses the field: the refreshed value
answers the sample first, fails it, and is refused like a validator refusal (the
old value keeps serving; ``Valid=False`` names the replay, the first error and its
operator). A value that answers is swapped in as before.

One process only: under ``--workers N`` a shared value (json_file has a codec) is
loaded by the supervisor, which has no engine to replay it with; it logs that the
entry's ``replay`` is not done (checked below), and its values swap unreplayed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from .pod import Server, condition

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


def _answered(server: Server, times: int = 5) -> list[dict[str, Any]]:
    """Live traffic (kept in the sample: spaced past its one-per-millisecond rate)."""
    items: list[dict[str, Any]] = []
    for _ in range(times):
        items = server.items()
        time.sleep(0.003)
    return items


@pytest.mark.parametrize("serve", ["one process"], indirect=True)
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

    feed.write_bytes(orjson.dumps([{"id": 3, "score": 2.0}]))  # answers: swapped in
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become([{"id": 3, "double": 4.0}])
    assert condition(server.status(), "Valid")["status"] == "True"


@pytest.mark.parametrize("serve", ["--workers 2"], indirect=True)
def test_under_workers_a_shared_values_replay_is_said_not_to_be_done(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps([{"id": 1, "score": 1.0}]))
    server = serve(_config(feed))
    line = server.wait_line(r"resource 'feed': 'replay' is not done for a value shared")
    assert "swap in after the validators only" in line.string
