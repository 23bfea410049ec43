"""The Go server's operational surface on a real ``pineapple serve`` process:
``/health``, ``/stats``, ``/dag``, ``_return_trace`` and the ``pine_*`` metric families."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .._serve import Serve
from .pod import serve_plugin

pytestmark = pytest.mark.e2e

CONFIG: dict[str, Any] = {
    "pipeline_config": {
        "operators": {
            "recall_a": {
                "type_name": "recall_static",
                "items": [{"id": 1, "score": 2}, {"id": 2, "score": 5}],
                "$metadata": {"item_output": ["id", "score"]},
            },
            "recall_b": {
                "type_name": "recall_static",
                "items": [{"id": 3, "score": 1}],
                "$metadata": {"item_output": ["id", "score"]},
            },
            "boost": {
                "type_name": "transform_by_lua",
                "lua_script": "function f() return math.max(score, 0) * 10 end",  # through Lua
                "function_for_item": "f",
                "debug": True,
                "$metadata": {"item_input": ["score"], "item_output": ["score"]},
            },
            "sort": {
                "type_name": "reorder_sort",
                "order": "desc",
                "$metadata": {"item_input": ["score"]},
            },
            "maybe_size": {
                "type_name": "transform_size",
                "$metadata": {"common_input": ["_no_size"], "common_output": ["n"]},
                "skip": ["_no_size"],
            },
        },
        "pipeline_map": {"recalls": {"pipeline": ["recall_a", "recall_b"]}},
    },
    "pipeline_group": {"main": {"pipeline": ["recalls", "boost", "sort", "maybe_size"]}},
    "flow_contract": {"item_output": ["id", "score"]},
}
OPERATORS = ["recall_a", "recall_b", "boost", "sort", "maybe_size"]

GO_FAMILIES = {
    # family (as exposed: counters with _total) -> label names
    "pine_http_requests_total": {"method", "path", "status"},
    "pine_http_request_duration_seconds_bucket": {"method", "path", "le"},
    "pine_operator_exec_total": {"operator"},
    "pine_operator_exec_duration_seconds_bucket": {"operator", "le"},
    "pine_operator_skip_total": {"operator"},
    "pine_operator_error_total": {"operator"},
    "pine_operator_active": set(),
    "pine_dag_executions_total": {"status"},
    "pine_dag_execution_duration_seconds_bucket": {"le"},
    "pine_dag_operators_executed_bucket": {"le"},
    "pine_scheduler_runs_total": set(),
    "pine_lua_pool_borrow_total": {"operator"},
    "pine_lua_pool_return_total": {"operator"},
    "pine_lua_pool_create_total": {"operator"},
    "pine_lua_pool_active": {"operator"},
    "pine_config_reload_total": set(),
    "pine_config_reload_errors_total": set(),
    "pine_config_reload_duration_seconds_bucket": {"le"},
    "pine_redis_pool_total_conns": {"name"},
    "pine_redis_pool_idle_conns": {"name"},
    "pine_redis_ping_duration_seconds_bucket": {"name", "le"},
    "pine_redis_up": {"name"},
    "pine_redis_command_duration_seconds_bucket": {"name", "command", "status", "le"},
    "pine_redis_command_total": {"name", "command", "status"},
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Serve]:
    config = tmp_path / "pipeline.json"
    config.write_bytes(orjson.dumps(CONFIG))
    proc = serve_plugin(config, tmp_path / "closes.log")
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture
def redis_server(tmp_path: Path, redis_addr: str) -> Iterator[Serve]:
    """The same config plus a ``redis_connection`` and a group ``redis`` that reads it."""
    config: dict[str, Any] = orjson.loads(orjson.dumps(CONFIG))
    config["resource_config"] = {
        "cache": {"type": "redis_connection", "params": {"addr": redis_addr}},
    }
    config["pipeline_config"]["operators"]["get"] = {
        "type_name": "transform_redis_get",
        "resource_name": "cache",
        "key_prefix": "pineapple:test:parity:",
        "$metadata": {"common_output": ["val", "hit"]},
    }
    config["pipeline_group"]["redis"] = {"pipeline": ["get"]}
    path = tmp_path / "pipeline.json"
    path.write_bytes(orjson.dumps(config))
    proc = serve_plugin(path, tmp_path / "closes.log")
    try:
        yield proc
    finally:
        proc.close()


def _execute(url: str, common: dict[str, Any]) -> httpx.Response:
    body = orjson.dumps({"common": common, "items": []})
    return httpx.post(url + "/execute", content=body, timeout=10)


def test_health_answers_like_go(server: Serve) -> None:
    r = httpx.get(server.url + "/health", timeout=10)
    assert (r.status_code, r.json()) == (200, {"status": "ok"})
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200


def server_revision(server: Serve) -> str:
    revision: str = httpx.get(f"{server.url}/config", timeout=10).json()["config"]["revision"]
    return revision


def test_trace_only_when_asked(server: Serve) -> None:
    plain = _execute(server.url, {"_no_size": True})
    assert plain.status_code == 200
    assert b"trace" not in plain.content
    traced = _execute(server.url, {"_no_size": True, "_return_trace": True})
    assert traced.status_code == 200
    body = traced.json()
    assert body["items"] == plain.json()["items"]
    # Go's keys, then ours: what served the answer (a key a Go client ignores).
    assert list(body) == ["common", "items", "trace", "served_by"]
    assert set(body["served_by"]) == {"config_revision", "resources"}
    assert body["served_by"]["config_revision"] == server_revision(server)
    trace = body["trace"]
    assert [t["name"] for t in trace] == OPERATORS
    assert all(isinstance(t["duration_ms"], int | float) for t in trace)
    assert trace[-1] == {"name": "maybe_size", "duration_ms": 0, "skipped": True}
    assert "skipped" not in trace[0] and "input_snapshot" not in trace[0]
    boost = trace[2]  # debug: true -> snapshots, as the Go engine
    assert boost["input_snapshot"] == {"items": [{"score": 2}, {"score": 5}, {"score": 1}]}
    assert boost["output_snapshot"] == {
        "item_writes": {"0": {"score": 20}, "1": {"score": 50}, "2": {"score": 10}}
    }
    # A non-true flag is no request for a trace.
    assert b"trace" not in _execute(server.url, {"_return_trace": "yes"}).content


def test_stats_has_go_composite_shape(server: Serve) -> None:
    for common in ({"_no_size": True}, {"_no_size": None}, {"_no_size": True}):
        assert _execute(server.url, common).status_code == 200
    httpx.get(server.url + "/health", timeout=10)
    r = httpx.get(server.url + "/stats", timeout=10)
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= {"operators", "scheduler", "server", "http", "resources"}
    ops = body["operators"]
    assert set(ops) == set(OPERATORS)
    assert ops["recall_a"]["exec_count"] == 3
    assert (ops["maybe_size"]["exec_count"], ops["maybe_size"]["skip_count"]) == (1, 2)
    assert set(ops["sort"]) == {
        "exec_count",
        "skip_count",
        "error_count",
        "total_duration_ns",
        "max_duration_ns",
        "avg_duration_ns",
    }
    assert body["scheduler"] == {"run_count": 3, "peak_concurrency": 1}
    assert body["server"] == {
        "reload_count": 0,
        "reload_error_count": 0,
        "last_reload_duration_ns": 0,
    }
    assert body["http"]["requests_total"]["POST /execute 2xx"] == 3
    assert body["http"]["request_duration_seconds"]["GET /health"]["count"] == 1
    assert body["operator_detail"]["boost"]["borrow_count"] == 3


def test_dag_dot_and_mermaid(server: Serve) -> None:
    dot = httpx.get(server.url + "/dag", timeout=10)
    assert dot.status_code == 200
    assert dot.headers["content-type"].startswith("text/vnd.graphviz")
    text = dot.text
    assert text.startswith("digraph pipeline {")
    for name in OPERATORS:
        assert f'"{name}" [label="{name}"' in text
    # Transitive reduction: recall_a -> sort is implied by recall_a -> boost -> sort.
    assert '"recall_a" -> "boost";' in text and '"recall_a" -> "sort";' not in text
    mermaid = httpx.get(server.url + "/dag?format=mermaid&collapse=1", timeout=10)
    assert mermaid.status_code == 200
    assert 'g0["recalls"]:::subflow' in mermaid.text
    assert "g0 --> g1" in mermaid.text
    assert httpx.get(server.url + "/dag?format=png", timeout=10).status_code == 400
    assert httpx.get(server.url + "/dag?collapse=-1", timeout=10).status_code == 400
    assert httpx.get(server.url + "/dag?group=nope", timeout=10).status_code == 404


@pytest.mark.redis
def test_metrics_has_every_go_family_with_go_labels(redis_server: Serve) -> None:
    server = redis_server
    for common in ({"_no_size": True}, {"_no_size": None}):
        assert _execute(server.url, common).status_code == 200
    redis_get = httpx.post(server.url + "/execute/redis", content=b'{"common": {}}', timeout=10)
    assert redis_get.status_code == 200, redis_get.text
    httpx.get(server.url + "/stats", timeout=10)
    # Bounded: the first PING probe runs at start; scrape until it has answered (10 s).
    deadline = time.monotonic() + 10
    text = ""
    while "pine_redis_up{" not in text and time.monotonic() < deadline:
        text = httpx.get(server.url + "/metrics", timeout=10).text
        time.sleep(0.05)  # a scrape interval, not a wait for a side effect: we re-check
    seen: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^(pine_[a-z_]+)(?:\{(.*)\})? ", line)
        if m:
            labels = set(re.findall(r'([a-z_]+)="', m.group(2) or ""))
            seen.setdefault(m.group(1), labels)
    for family, labels in GO_FAMILIES.items():
        assert family in seen, f"{family} missing from /metrics"
        assert seen[family] == labels, family
    assert 'pine_operator_exec_total{operator="recall_a"} 2.0' in text
    assert 'pine_operator_skip_total{operator="maybe_size"} 1.0' in text
    assert 'pine_dag_executions_total{status="success"} 3.0' in text  # main x2, redis
    assert 'pine_http_requests_total{method="POST",path="/execute",status="2xx"} 3.0' in text
    assert 'pine_lua_pool_borrow_total{operator="boost"} 2.0' in text
    assert 'pine_redis_command_total{command="GET",name="cache",status="ok"} 1.0' in text
    assert "pineapple_http_requests_total" in text  # ours stay beside them
