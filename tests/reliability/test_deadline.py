"""Issue 11, items 1 and 5: per-request deadline, item limit, large requests off the loop.

Every test runs a real ``pineapple serve`` process (killed in a ``finally``)
and bounds itself with client timeouts; nothing here waits on a sleep.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from pineapple import Context, builtins, resource
from pineapple.engine import Engine

from ._deadline import DeadlineServe, PausableProxy, pipeline_config

pytestmark = pytest.mark.e2e

CPU_OPERATORS = {
    "cpu": {
        "type_name": "transform_bench_cpu",
        "iterations": 2000,
        "$metadata": {"item_output": ["r"]},
    }
}


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(config))
    return path


@pytest.fixture
def cpu_server(tmp_path: Path) -> Iterator[DeadlineServe]:
    server = DeadlineServe(
        _write(tmp_path, pipeline_config(CPU_OPERATORS))
    )  # default deadline: 1000 ms
    try:
        yield server
    finally:
        server.close()


def test_request_past_its_deadline_gets_504_and_the_cpu_work_stops(
    cpu_server: DeadlineServe,
) -> None:
    # About 4 ms of work per item: 5,000 items would run ~20 s without a deadline.
    body = orjson.dumps({"common": {}, "items": [{"id": i} for i in range(5000)]})
    started = time.monotonic()
    reply = httpx.post(f"{cpu_server.url}/execute", content=body, timeout=10)
    elapsed = time.monotonic() - started
    assert reply.status_code == 504
    assert reply.json() == {"error": 'deadline exceeded in operator "cpu"'}
    assert elapsed < 2.0, f"answered after {elapsed:.2f}s, more than 2x the 1 s deadline"
    # The answer is sent only after the engine returned, so the work has stopped:
    # over the next half second the process burns (almost) nothing.
    before = cpu_server.cpu_seconds()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:  # bounded: half a second of polling /healthz
        assert httpx.get(f"{cpu_server.url}/healthz", timeout=5).status_code == 200
    assert cpu_server.cpu_seconds() - before < 0.3


def test_more_items_than_the_limit_get_413(cpu_server: DeadlineServe) -> None:
    body = orjson.dumps({"common": {}, "items": [{}] * 100_001})
    reply = httpx.post(f"{cpu_server.url}/execute", content=body, timeout=10)
    assert reply.status_code == 413
    assert reply.json() == {"error": "request has 100001 items, more than the limit of 100000"}


def test_max_items_flag_raises_the_limit(tmp_path: Path) -> None:
    ops = {"n": {"type_name": "transform_size", "$metadata": {"common_output": ["n"]}}}
    config = pipeline_config(ops, flow_contract={"common_output": ["n"]})
    server = DeadlineServe(_write(tmp_path, config), "--max-items", "3")
    try:
        four = orjson.dumps({"common": {}, "items": [{}] * 4})
        three = orjson.dumps({"common": {}, "items": [{}] * 3})
        assert httpx.post(f"{server.url}/execute", content=four, timeout=10).status_code == 413
        reply = httpx.post(f"{server.url}/execute", content=three, timeout=10)
        assert reply.status_code == 200
        assert reply.json()["common"] == {"n": 3}
    finally:
        server.close()


def test_healthz_answers_while_a_large_request_runs(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    ops = {"gate": {"type_name": "test_inline_gate", "folder": str(gate)}}
    server = DeadlineServe(_write(tmp_path, pipeline_config(ops)), "--request-timeout-ms", "30000")
    try:
        # ~200 KB: above the 64 KiB inline threshold; the engine itself never blocks.
        body = orjson.dumps({"common": {}, "items": [{"pad": "x" * 90}] * 2000})
        replies: list[httpx.Response] = []
        big = threading.Thread(
            target=lambda: replies.append(
                httpx.post(f"{server.url}/execute", content=body, timeout=30)
            )
        )
        big.start()
        try:
            entered = gate / "entered"
            end = time.monotonic() + 20
            while not entered.exists():  # bounded: 20 s for the request to reach the gate
                assert time.monotonic() < end, "the large request never reached the gate"
                big.join(0.01)
            # The large request is held inside the engine; the loop must still answer.
            assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        finally:
            (gate / "go").touch()
            big.join(30)
        assert not big.is_alive()
        assert [r.status_code for r in replies] == [200]
    finally:
        server.close()


@pytest.fixture
def redis_key(redis_addr: str) -> Iterator[str]:
    host, _, port = redis_addr.rpartition(":")
    client = redis.Redis(host=host, port=int(port))
    key = f"pineapple-test:{uuid.uuid4().hex[:8]}:u1"
    client.set(key, "cached", ex=60)
    try:
        yield key
    finally:
        client.delete(key)
        client.close()


def _redis_config(addr: str, prefix: str) -> dict[str, Any]:
    ops = {
        "get": {
            "type_name": "transform_redis_get",
            "resource_name": "rc",
            "key_prefix": prefix,
            "$metadata": {"common_input": ["uid"], "common_output": ["val", "hit"]},
        }
    }
    return pipeline_config(
        ops,
        flow_contract={"common_input": ["uid"], "common_output": ["val", "hit"]},
        resource_config={"rc": {"type": "redis_connection", "params": {"addr": addr}}},
    )


@pytest.mark.redis
def test_a_stopped_redis_costs_a_request_its_deadline_not_the_socket_timeout(
    tmp_path: Path, redis_addr: str, redis_key: str
) -> None:
    host, _, port = redis_addr.rpartition(":")
    proxy = PausableProxy((host, int(port)))
    server: DeadlineServe | None = None
    try:
        prefix = redis_key[: -len("u1")]
        config = _write(tmp_path, _redis_config(proxy.addr, prefix))
        server = DeadlineServe(config, "--request-timeout-ms", "500")
        body = orjson.dumps({"common": {"uid": "u1"}})
        url = f"{server.url}/execute"
        reply = httpx.post(url, content=body, timeout=10)
        assert reply.json()["common"] == {"val": "cached", "hit": True}
        proxy.pause()
        for _ in range(3):  # each request alone: the pooled connection, then new ones
            started = time.monotonic()
            reply = httpx.post(url, content=body, timeout=10)
            elapsed = time.monotonic() - started
            assert reply.status_code == 504, (elapsed, reply.text)
            assert reply.json()["error"].startswith('deadline exceeded in operator "get"')
            assert elapsed < 1.0, f"answered after {elapsed:.2f}s, more than 2x the deadline"
        proxy.resume()
        reply = httpx.post(url, content=body, timeout=10)
        assert reply.status_code == 200
        assert reply.json()["common"] == {"val": "cached", "hit": True}
    finally:
        if server is not None:
            server.close()
        proxy.close()


@pytest.mark.redis
@pytest.mark.parametrize(
    ("data_type", "value", "expected"),
    [("string", "hello", "hello"), ("set", ["b", "a"], ["a", "b"]), ("list", ["x", "y"], None)],
)
def test_redis_operators_round_trip_within_a_deadline(
    redis_addr: str, redis_key: str, data_type: str, value: Any, expected: Any
) -> None:
    # The deadline path sends raw commands itself: the same answers as the client's own path.
    prefix = redis_key[: -len("u1")]
    key_params = {"resource_name": "rc", "key_prefix": prefix, "data_type": data_type}
    config = pipeline_config(
        {
            "set": {
                "type_name": "transform_redis_set",
                **key_params,
                "ttl": 60,
                "$metadata": {"common_input": ["uid", "payload"]},
            },
            "get": {
                "type_name": "transform_redis_get",
                **key_params,
                "$metadata": {"common_input": ["uid"], "common_output": ["val", "hit"]},
            },
        },
        flow_contract={"common_output": ["val", "hit"]},
    )
    host, _, port = redis_addr.rpartition(":")
    client = redis.Redis(host=host, port=int(port))
    try:
        ctx = resource.with_resources(Context(), resource.Static({"rc": client})).with_timeout(5)
        with Engine(config, registry=builtins.operator_registry()) as engine:
            out = engine.execute(ctx, {"common": {"uid": "u1", "payload": value}, "items": []})
        assert out["common"] == {"val": value if expected is None else expected, "hit": True}
        assert 0 < client.ttl(redis_key) <= 60
    finally:
        client.close()
