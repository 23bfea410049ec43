"""Issue 13 item 6: ``transform_by_remote_pineapple`` between two real ``pineapple serve``s.

Both processes listen on loopback (free ports) and are killed in a
``finally``. Loopback is private: the caller must say ``allow_private: true``,
and without it the calling server refuses to start.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from tests._serve import run_cli
from tests.reliability._deadline import DeadlineServe, pipeline_config

pytestmark = pytest.mark.e2e


def _write(path: Path, config: dict[str, Any]) -> Path:
    path.write_bytes(orjson.dumps(config))
    return path


def _downstream_config() -> dict[str, Any]:
    """Copies the request's ``user`` to ``greeting`` and each item's ``item`` to ``label``."""
    ops: dict[str, dict[str, Any]] = {
        "common": {
            "type_name": "transform_copy",
            "direction": "common_to_common",
            "$metadata": {"common_input": ["user"], "common_output": ["greeting"]},
        },
        "items": {
            "type_name": "transform_copy",
            "direction": "item_to_item",
            "$metadata": {"item_input": ["item"], "item_output": ["label"]},
        },
        "cpu": {
            "type_name": "transform_bench_cpu",
            "iterations": 1,
            "$metadata": {"item_output": ["work"]},
        },
    }
    contract = {
        "common_input": ["user"],
        "common_output": ["greeting"],
        "item_input": ["item"],
        "item_output": ["label"],
    }
    return pipeline_config(ops, flow_contract=contract)


def _upstream_config(port: int, **params: Any) -> dict[str, Any]:
    meta = {
        "common_input": ["uid"],
        "common_output": ["hello"],
        "item_input": ["id"],
        "item_output": ["name"],
    }
    ops = {
        "remote": {
            "type_name": "transform_by_remote_pineapple",
            "host": "127.0.0.1",
            "port": port,
            "common_request": ["user"],
            "item_request": ["item"],
            "common_response": ["greeting"],
            "item_response": ["label"],
            "$metadata": meta,
            **params,
        }
    }
    return pipeline_config(ops, flow_contract=meta)


def test_calls_a_second_server_on_loopback_with_allow_private(tmp_path: Path) -> None:
    downstream = DeadlineServe(_write(tmp_path / "down.json", _downstream_config()))
    upstream: DeadlineServe | None = None
    try:
        port = urlsplit(downstream.url).port
        assert port is not None
        config = _upstream_config(port, allow_private=True, timeout=5.0)
        upstream = DeadlineServe(_write(tmp_path / "up.json", config))
        body = {"common": {"uid": "u7"}, "items": [{"id": "a"}, {"id": "b"}]}
        for _ in range(3):  # the pooled connection is reused across requests
            reply = httpx.post(f"{upstream.url}/execute", content=orjson.dumps(body), timeout=10)
            assert reply.status_code == 200, reply.text
            assert reply.json() == {
                "common": {"hello": "u7"},
                "items": [{"name": "a"}, {"name": "b"}],
            }
    finally:
        if upstream is not None:
            upstream.close()
        downstream.close()


@pytest.mark.timeout(60)
def test_the_callers_deadline_bounds_a_slow_downstream(tmp_path: Path) -> None:
    slow = _downstream_config()
    slow["pipeline_config"]["operators"]["cpu"]["iterations"] = 2000  # ~4 ms per item
    downstream = DeadlineServe(
        _write(tmp_path / "down.json", slow), "--request-timeout-ms", "20000"
    )
    upstream: DeadlineServe | None = None
    try:
        port = urlsplit(downstream.url).port
        assert port is not None
        config = _upstream_config(port, allow_private=True, timeout=30.0)
        upstream = DeadlineServe(
            _write(tmp_path / "up.json", config), "--request-timeout-ms", "500"
        )
        items = [{"id": str(i)} for i in range(5000)]  # ~20 s of downstream work
        body = orjson.dumps({"common": {"uid": "u"}, "items": items})
        started = time.monotonic()
        reply = httpx.post(f"{upstream.url}/execute", content=body, timeout=10)
        elapsed = time.monotonic() - started
        assert reply.status_code == 504, reply.text
        assert reply.json()["error"].startswith('deadline exceeded in operator "remote"')
        assert elapsed < 1.5, f"answered after {elapsed:.2f}s, more than 2x the 500 ms deadline"
    finally:
        if upstream is not None:
            upstream.close()
        downstream.close()


def test_loopback_is_refused_without_allow_private(tmp_path: Path) -> None:
    config = _write(tmp_path / "up.json", _upstream_config(8080))
    done = run_cli("serve", str(config), "--addr", "127.0.0.1:0", "--no-watch", timeout=30)
    err = done.stderr
    assert done.returncode != 0
    assert "listening on" not in err
    assert "transform_by_remote_pineapple" in err
    assert 'host "127.0.0.1"' in err and "allow_private" in err
