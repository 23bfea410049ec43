"""Go's per-command and pool Redis families on a real ``pineapple serve`` and a real Redis.

``pine_redis_command_total`` / ``pine_redis_command_duration_seconds`` (labels
``name``, ``command``, ``status``) and ``pine_redis_pool_total_conns`` /
``pine_redis_pool_idle_conns`` (label ``name``): a command that succeeds (a
miss and a hit: ``ok``), one that times out against a paused connection (a
proxy of the test's own, never the shared Redis: ``timeout``), one that waits
for the only pooled connection while that one is stuck (``pool_timeout``) and
one refused by a closed port (``error``).
"""

from __future__ import annotations

import re
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis

from tests.reliability._deadline import DeadlineServe, PausableProxy, pipeline_config

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

REQUEST_TIMEOUT_MS = 2000


class _SignalledProxy(PausableProxy):
    """A :class:`PausableProxy` that sets ``received`` once a client's bytes arrived."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.received = threading.Event()
        super().__init__(upstream)

    def _pump(self, sock: socket.socket) -> None:
        super()._pump(sock)
        self.received.set()


def _closed_port() -> str:
    """A loopback port nothing listens on (bound, then closed: connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _get(resource: str, prefix: str) -> dict[str, Any]:
    return {
        "type_name": "transform_redis_get",
        "resource_name": resource,
        "key_prefix": prefix,
        "$metadata": {"common_input": ["uid"], "common_output": ["val", "hit"]},
    }


def _config(cache: str, slow: str, down: str, prefix: str) -> dict[str, Any]:
    no_probe = {"probe_interval_ms": 0}  # only the operators' commands reach the servers
    resources = {
        "cache_conn": {
            "type": "redis_connection",
            "params": {"addr": cache, "metrics_name": "cache", **no_probe},
        },
        "slow": {
            "type": "redis_connection",
            "params": {"addr": slow, "pool_size": 1, "pool_timeout_ms": 200, **no_probe},
        },
        "down": {
            "type": "redis_connection",
            "params": {"addr": down, "dial_timeout_ms": 500, **no_probe},
        },
    }
    config = pipeline_config(
        {"get_cache": _get("cache_conn", prefix)},
        flow_contract={"common_input": ["uid"], "common_output": ["val", "hit"]},
        resource_config=resources,
    )
    config["pipeline_config"]["operators"].update(
        get_slow=_get("slow", prefix), get_down=_get("down", prefix)
    )
    config["pipeline_group"].update(
        slow={"pipeline": ["get_slow"]}, down={"pipeline": ["get_down"]}
    )
    return config


def _post(url: str, path: str = "/execute") -> httpx.Response:
    return httpx.post(url + path, content=b'{"common": {"uid": "u1"}}', timeout=30)


def _samples(text: str, family: str, le: str | None = None) -> dict[tuple[str, str, str], float]:
    """``{(name, command, status): value}`` of one family's samples (of bucket ``le``, if given)."""
    out: dict[tuple[str, str, str], float] = {}
    for line in text.splitlines():  # bounded: the scrape's lines
        m = re.match(rf"^{family}\{{(.*)\}} (\S+)$", line)
        if m:
            labels = dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(1)))
            if labels.pop("le", None) == le:
                assert set(labels) == {"name", "command", "status"}, line
                out[(labels["name"], labels["command"], labels["status"])] = float(m.group(2))
    return out


def _gauge(text: str, family: str, name: str) -> float:
    m = re.search(rf'^{family}\{{name="{name}"\}} (\S+)$', text, re.MULTILINE)
    assert m is not None, f"{family}{{name={name!r}}} missing:\n{text}"
    return float(m.group(1))


def test_command_metrics_count_ok_timeout_pool_timeout_and_error(
    tmp_path: Path, redis_addr: str
) -> None:
    prefix = f"pineapple:test:metrics:{uuid.uuid4().hex}:"
    host, _, port = redis_addr.rpartition(":")
    direct = redis.Redis(host=host, port=int(port), socket_timeout=5)
    proxy = _SignalledProxy((host, int(port)))
    proxy.pause()  # from the start: the slow resource's first command never gets a reply
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(_config(redis_addr, proxy.addr, _closed_port(), prefix)))
    server = DeadlineServe(path, "--request-timeout-ms", str(REQUEST_TIMEOUT_MS))
    stuck: list[httpx.Response] = []
    holder = threading.Thread(target=lambda: stuck.append(_post(server.url, "/execute/slow")))
    try:
        # ok: a miss, then a hit.
        assert _post(server.url).json()["common"] == {"hit": False}
        direct.set(f"{prefix}u1", "v")
        assert _post(server.url).json()["common"] == {"hit": True, "val": "v"}
        # timeout: the only pooled connection of "slow" waits for a reply that never comes
        # (until the request's deadline); pool_timeout: a second request meanwhile waits
        # 200 ms for that connection and degrades.
        holder.start()
        assert proxy.received.wait(10), "the stuck request never reached the proxy"
        waiting = _post(server.url, "/execute/slow")
        assert (waiting.status_code, waiting.json()["common"]) == (200, {"hit": False})
        holder.join(30)
        assert not holder.is_alive()
        assert stuck[0].status_code == 504, stuck[0].text
        # error: connection refused.
        refused = _post(server.url, "/execute/down")
        assert (refused.status_code, refused.json()["common"]) == (200, {"hit": False})

        text = httpx.get(server.url + "/metrics", timeout=10).text
        counts = _samples(text, "pine_redis_command_total")
        assert counts == {
            ("cache", "GET", "ok"): 2.0,
            ("slow", "GET", "timeout"): 1.0,
            ("slow", "GET", "pool_timeout"): 1.0,
            ("down", "GET", "error"): 1.0,
        }, text
        assert _samples(text, "pine_redis_command_duration_seconds_count") == counts, text
        timed_out = _samples(text, "pine_redis_command_duration_seconds_sum")
        assert timed_out[("slow", "GET", "timeout")] >= 0.5 * REQUEST_TIMEOUT_MS / 1000
        buckets = _samples(text, "pine_redis_command_duration_seconds_bucket", "+Inf")
        assert buckets == counts, text
        # Pool gauges: one connection each for cache and slow (the stuck one was closed
        # and handed back), none ever opened to the closed port; nothing is in use now.
        assert _gauge(text, "pine_redis_pool_total_conns", "cache") == 1.0
        assert _gauge(text, "pine_redis_pool_idle_conns", "cache") == 1.0
        assert _gauge(text, "pine_redis_pool_idle_conns", "slow") == _gauge(
            text, "pine_redis_pool_total_conns", "slow"
        )
    finally:
        server.close()
        proxy.close()
        direct.delete(f"{prefix}u1")
        direct.close()
