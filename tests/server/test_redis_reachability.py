"""Issue 13 item 8: a config that starts on the Go engine starts here, Redis up or down.

Real ``pineapple serve`` processes (killed in a ``finally``): ``redis_connection``
connects lazily, so a server whose Redis is unreachable starts, degrades its
Redis operators, and reports the resource through the ``Reachable`` condition
and ``pine_redis_up`` / ``pine_redis_ping_duration_seconds`` (Go's family and
label names); ``ping_at_start: true`` keeps the fail-fast start.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests._serve import run_cli
from tests.reliability._deadline import DeadlineServe, pipeline_config

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

DOWN = "127.0.0.1:1"  # nothing listens on port 1: connections are refused at once


def _config(resources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ops = {
        "get": {
            "type_name": "transform_redis_get",
            "resource_name": "down",
            "key_prefix": "pineapple:test:reach:",
            "$metadata": {"common_input": ["uid"], "common_output": ["val", "hit"]},
        }
    }
    contract = {"common_input": ["uid"], "common_output": ["val", "hit"]}
    return pipeline_config(ops, flow_contract=contract, resource_config=resources)


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(config))
    return path


def _metrics_until(url: str, pattern: str, timeout: float = 10.0) -> str:
    """``/metrics`` once it matches ``pattern`` (the first probes run right after start)."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:  # bounded: the deadline above
        text = httpx.get(f"{url}/metrics", timeout=5).text
        if re.search(pattern, text, re.MULTILINE):
            return text
        time.sleep(0.05)  # a scrape interval, not a wait for a side effect: we re-check
    raise AssertionError(f"/metrics never matched {pattern!r}:\n{text}")


def test_unreachable_redis_starts_degrades_and_is_reported(tmp_path: Path, redis_addr: str) -> None:
    resources = {
        "down": {
            "type": "redis_connection",
            "params": {"addr": DOWN, "probe_interval_ms": 200, "dial_timeout_ms": 500},
        },
        "up": {"type": "redis_connection", "params": {"addr": redis_addr, "metrics_name": "cache"}},
    }
    server = DeadlineServe(_write(tmp_path, _config(resources)))
    try:
        reply = httpx.post(
            f"{server.url}/execute", content=b'{"common": {"uid": "u1"}}', timeout=10
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["common"] == {"hit": False}  # degraded, as on the Go engine

        text = _metrics_until(
            server.url, r'^pine_redis_up\{name="down"\} 0\.0$(?s:.*)^pine_redis_up\{name="cache"\}'
        )
        assert re.search(r'^pine_redis_up\{name="cache"\} 1\.0$', text, re.MULTILINE), text
        count = re.search(
            r'^pine_redis_ping_duration_seconds_count\{name="cache"\} (\d+)\.0$', text, re.M
        )
        assert count is not None and int(count.group(1)) >= 1, text
        assert 'pine_redis_ping_duration_seconds_bucket{le="+Inf",name="down"}' in text

        detail = httpx.get(f"{server.url}/resources/down", timeout=5).json()["status"]
        conditions = {c["type"]: c for c in detail["conditions"]}
        assert conditions["Ready"]["status"] == "True"
        assert conditions["Reachable"]["status"] == "False"
        assert DOWN in conditions["Reachable"]["message"]
        detail = httpx.get(f"{server.url}/resources/up", timeout=5).json()["status"]
        assert {c["type"]: c["status"] for c in detail["conditions"]}["Reachable"] == "True"
    finally:
        server.close()


def test_ping_at_start_keeps_the_fail_fast_start(tmp_path: Path) -> None:
    resources = {
        "down": {
            "type": "redis_connection",
            "params": {"addr": DOWN, "ping_at_start": True, "dial_timeout_ms": 500},
        }
    }
    config = _write(tmp_path, _config(resources))
    done = run_cli("serve", str(config), "--addr", "127.0.0.1:0", "--no-watch", timeout=30)
    err = done.stderr
    assert done.returncode != 0
    assert "listening on" not in err
    assert f"cannot reach Redis at {DOWN}" in err
