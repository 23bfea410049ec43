"""A Lua result that would take the process down is refused within the request's
deadline, in one process and with ``--workers 2``: a table shared 40 deep (2^40 leaves
if converted naively, the issue's freeze) and a 12 MiB string for each of 40 items
(480 MiB against a 64 MiB budget). ``/healthz`` answers throughout and the next good
request is served."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import pytest

from .fakes import unified_config
from .pod import WAIT, Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SCRIPT = """
local BIG = string.rep("x", 12 * 1024 * 1024)
function f()
  if kind == "shared" then
    local t = {1}
    for _ = 1, 40 do t = {t, t} end
    return t
  elseif kind == "big" then
    return BIG
  end
  return "ok"
end
"""


def _config() -> dict[str, Any]:
    lua = {
        "type_name": "transform_by_lua",
        "lua_script": SCRIPT,
        "function_for_item": "f",
        "timeout_ms": 10_000,  # a busy test box: the bounds refuse, never the deadline
        "$metadata": {
            "common_input": ["kind"],
            "common_output": [],
            "item_input": [],
            "item_output": ["out"],
        },
    }
    config = unified_config("v1", extra_ops={"lua": lua})
    config["flow_contract"]["common_input"] = ["kind"]
    config["flow_contract"]["item_output"] = ["id", "tag", "out"]
    return config


def _execute(server: Server, kind: str, items: int) -> httpx.Response:
    body = {"common": {"kind": kind}, "items": [{"id": f"i{n}"} for n in range(items)]}
    return httpx.post(f"{server.url}/execute", content=orjson.dumps(body), timeout=WAIT)


def test_lua_results_past_their_bounds_fail_the_request_and_the_pod_keeps_answering(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config(), "--request-timeout-ms", "20000")
    with ThreadPoolExecutor(4) as pool:
        started = time.monotonic()
        bad = [pool.submit(_execute, server, kind, 40) for kind in ("shared", "big") * 2]
        for _ in range(5):  # answered while the bad requests run (and after)
            ready = httpx.get(f"{server.url}/healthz", timeout=5.0)
            assert ready.status_code == 200, ready.text
        answers = [b.result(timeout=WAIT) for b in bad]
        elapsed = time.monotonic() - started
    for kind, answer in zip(("shared", "big") * 2, answers, strict=True):
        assert answer.status_code == 500, answer.text[:300]
        text = answer.text
        assert 'operator \\"lua\\"' in text or 'operator "lua"' in text, text[:300]
        if kind == "shared":
            assert "appears twice in one value (a shared reference)" in text, text[:300]
        else:
            assert "characters of text (one call's bound: max_memory_mb)" in text, text[:300]
    assert elapsed < 20.0  # four refusals by the bounds (a 504 would say the deadline did it)
    good = _execute(server, "ok", 3)
    assert good.status_code == 200, good.text[:300]
    assert [row["out"] for row in good.json()["items"]] == ["ok"] * 4  # the static item too
