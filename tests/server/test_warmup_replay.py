"""Warm-up replay before a swap, against real servers in both process models.

A reload's candidate answers the requests the serving config answered lately
(each process's sample, collected pod-wide under ``--workers 2``) and the
config's own ``warmup_requests`` before it may serve: a Lua that fails on
half the items is refused with the replay's report while the old config keeps
answering; a good config passes and says what it replayed; ``--replay-seconds``
bounds a replay whose candidate hangs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from .fakes import unified_config
from .pod import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

REQUESTS = 10


def _config(tag: str, body: str, **extra: Any) -> dict[str, Any]:
    """A one-item config plus a Lua operator ``lua`` running ``body`` on each item
    (``n``: the item's number from the request)."""
    lua = {
        "type_name": "transform_by_lua",
        "lua_script": f"function f()\n{body}\nend",
        "function_for_item": "f",
        "timeout_ms": 60_000,
        "$metadata": {
            "common_input": [],
            "common_output": [],
            "item_input": ["n"],
            "item_output": ["out"],
        },
    }
    config = unified_config(tag, extra_ops={"lua": lua})
    static = config["pipeline_config"]["operators"]["static"]
    static["items"] = [{"id": "static", "tag": tag, "n": 0}]  # even: every Lua passes it
    static["$metadata"] = {**static["$metadata"], "item_output": ["id", "tag", "n"]}
    config["flow_contract"]["item_output"] = ["id", "tag", "out"]
    config.update(extra)
    return config


GOOD = 'return "ok"'
HALF = 'if n ~= nil and n % 2 == 1 then error("odd item " .. n) end\nreturn "ok"'


def _execute(server: Server, n: int) -> Any:
    body = {"common": {}, "items": [{"id": f"i{n}", "n": n}]}
    return server.http.post("/execute", content=orjson.dumps(body))


def _answered(server: Server) -> None:
    """Live traffic the serving config answers: one item each, numbered 0..9."""
    for n in range(REQUESTS):
        response = _execute(server, n)
        assert response.status_code == 200, response.text
        # The sample keeps at most one request per millisecond (its documented rate,
        # server/_request_sample.py): spaced past it, every one of these is kept.
        time.sleep(0.003)


def test_a_candidate_failing_half_the_items_is_refused_and_the_old_config_serves(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config("v1", GOOD))
    _answered(server)
    refused = server.reload(_config("v2", HALF))
    assert refused.status_code == 422, refused.text
    outcome = refused.json()
    assert outcome["result"] == "error" and outcome["step"] == "replay", outcome
    report = outcome["report"]
    assert report["replayed"] == REQUESTS and report["failed"] == REQUESTS // 2, report
    assert report["skipped"] == 0 and report["first_status"] == 500, report
    assert report["first_operator"] == "lua", report
    assert "odd item 1" in report["first_error"], report
    assert "failed 5 of 10 replayed requests" in outcome["error"], outcome
    # The old config keeps answering every request, odd ones included.
    for n in range(REQUESTS):
        response = _execute(server, n)
        assert response.status_code == 200, response.text
        assert response.json()["items"][-1]["tag"] == "v1"
    shown = server.http.get("/config").json()
    assert shown["last_reload_error"]["step"] == "replay", shown
    assert shown["last_reload_error"]["report"]["failed"] == REQUESTS // 2, shown


def test_a_good_candidate_passes_the_replay_and_serves(serve: Callable[..., Server]) -> None:
    server = serve(_config("v1", GOOD))
    _answered(server)
    warm = {"common": {}, "items": [{"id": "w", "n": 2}]}
    accepted = server.reload(_config("v2", 'return "ok2"', warmup_requests=[warm]))
    assert accepted.status_code == 200, accepted.text
    outcome = accepted.json()
    assert outcome["result"] == "ok", outcome
    assert outcome["report"]["replayed"] == REQUESTS + 1, outcome
    assert outcome["report"]["warmup"] == 1 and outcome["report"]["failed"] == 0, outcome
    response = _execute(server, 1)
    assert response.status_code == 200 and response.json()["items"][-1]["out"] == "ok2"


def test_a_failing_warmup_request_refuses_a_candidate_without_traffic(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config("v1", GOOD))
    odd = {"common": {}, "items": [{"id": "w", "n": 3}]}
    refused = server.reload(_config("v2", HALF, warmup_requests=[{"request": odd}]))
    assert refused.status_code == 422, refused.text
    report = refused.json()["report"]
    assert (report["warmup"], report["replayed"], report["failed"]) == (1, 1, 1), report
    assert server.items()[-1]["tag"] == "v1"


def test_the_budget_bounds_a_replay_whose_candidate_hangs(serve: Callable[..., Server]) -> None:
    # Requests 3..9 spin in Lua until their deadline: 60 s each (request and Lua
    # timeouts), 7 minutes unbounded. The replay stops at its 2 s budget instead.
    server = serve(_config("v1", GOOD), "--replay-seconds", "2", "--request-timeout-ms", "60000")
    _answered(server)
    hang = 'if n ~= nil and n >= 3 then while true do end end\nreturn "ok"'
    asked = time.monotonic()
    accepted = server.reload(_config("v2", hang))
    took = time.monotonic() - asked
    assert accepted.status_code == 200, accepted.text
    report = accepted.json()["report"]
    assert (report["replayed"], report["failed"], report["skipped"]) == (3, 0, 7), report
    assert 2.0 <= report["seconds"] < 6.0, report
    assert took < 30.0, took  # a trial process's spawn included, far below 7 minutes
