"""``redis_connection`` connects lazily (as the public engines do) and reports reachability.

The background PING probe sets the ``Reachable`` condition; ``ping_at_start``
(or the deprecated ``lazy_connect: false``) keeps the fail-fast load. Probes
are awaited through ``Reachability.wait_for`` (a condition variable), never
by sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import Manager, ResourceStatus
from pineapple.resource.lowlevel import flush_closes

from .conftest import TcpProxy

SECRET = "hunter2-very-secret"
WAIT = 10.0  # generous: a probe against a refused port takes milliseconds


def _config(**params: Any) -> dict[str, Any]:
    return {"resource_config": {"redis_conn": {"type": "redis_connection", "params": params}}}


@contextmanager
def _started(**params: Any) -> Iterator[tuple[Manager, resources.RedisConnection]]:
    rm = Manager()
    rm.load_from_root_config(_config(**params))
    rm.start()
    try:
        handle = rm.get("redis_conn")
        assert handle is not None
        client = handle.value
        handle.release()
        assert isinstance(client, resources.RedisConnection)
        yield rm, client
    finally:
        rm.stop()
        flush_closes()


def _reachable(status: ResourceStatus) -> tuple[str, str, str]:
    cond = status.condition("Reachable")
    assert cond is not None
    return cond.status, cond.reason, cond.message


def _probe_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "pineapple-redis-probe"]


def test_unreachable_redis_starts_lazily_and_is_reported_not_reachable() -> None:
    with _started(addr="127.0.0.1:1", password=SECRET, probe_interval_ms=100) as (rm, client):
        status = rm.status_of("redis_conn")
        assert status.ready  # a value to lend: commands fail and operators degrade
        assert client.reachability.wait_for(1, WAIT)
        state, reason, message = _reachable(rm.status_of("redis_conn"))
        assert (state, reason) == ("False", "ProbeFailed")
        assert "127.0.0.1:1" in message
        assert SECRET not in message
        report = client.probe_report()
        assert report.kind == "redis" and report.up is False and report.count >= 1


@pytest.mark.redis
def test_reachable_redis_is_reported_reachable_with_ping_latency(redis_addr: str) -> None:
    with _started(addr=redis_addr, metrics_name="cache") as (rm, client):
        assert client.reachability.wait_for(1, WAIT)  # the first probe runs at once
        state, reason, _ = _reachable(rm.status_of("redis_conn"))
        assert (state, reason) == ("True", "ProbeSucceeded")
        report = client.probe_report()
        assert report.label == "cache"
        assert report.count == report.bucket_counts[-1] >= 1
        assert report.sum_seconds > 0


@pytest.mark.redis
def test_reachability_follows_redis_going_down_and_back(redis_proxy: TcpProxy) -> None:
    addr = f"127.0.0.1:{redis_proxy.port}"
    with _started(addr=addr, probe_interval_ms=100, dial_timeout_ms=500) as (rm, client):
        reach = client.reachability
        assert reach.wait_for(1, WAIT)
        assert _reachable(rm.status_of("redis_conn"))[0] == "True"
        went_up_at = rm.status_of("redis_conn").condition("Reachable")

        redis_proxy.down()
        seen = reach.report().probes
        # A probe in flight at down() may still succeed; the one after it cannot.
        assert reach.wait_for(seen + 2, WAIT)
        down = rm.status_of("redis_conn").condition("Reachable")
        assert down is not None and down.status == "False"
        assert went_up_at is not None
        assert (down.last_transition_time or 0) >= (went_up_at.last_transition_time or 0)

        redis_proxy.up()  # same port: the pool reconnects on the next probe
        seen = reach.report().probes
        assert reach.wait_for(seen + 2, WAIT)
        assert _reachable(rm.status_of("redis_conn"))[0] == "True"


@pytest.mark.redis
def test_ping_at_start_records_the_load_ping_and_probes_later(redis_addr: str) -> None:
    with _started(addr=redis_addr, ping_at_start=True) as (rm, client):
        report = client.probe_report()
        assert report.up is True and report.probes == 1  # the load's PING; next probe in 15 s
        assert _reachable(rm.status_of("redis_conn"))[:2] == ("True", "ProbeSucceeded")


def test_stop_ends_the_probe_thread() -> None:
    before = set(_probe_threads())
    with _started(addr="127.0.0.1:1", probe_interval_ms=100) as (_, client):
        assert client.reachability.wait_for(1, WAIT)
        assert len(set(_probe_threads()) - before) == 1
    assert client.closed
    assert set(_probe_threads()) - before == set()  # close() joined it


def test_no_probe_when_interval_is_zero() -> None:
    with _started(addr="127.0.0.1:1", probe_interval_ms=0) as (rm, client):
        assert _reachable(rm.status_of("redis_conn"))[:2] == ("Unknown", "NotProbed")
        assert client.probe_report().probes == 0


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"ping_at_start": True, "lazy_connect": True}, "'lazy_connect' (true) contradict"),
        ({"probe_interval_ms": 5}, "'probe_interval_ms': must be 0 (no probe) or >= 100"),
    ],
)
def test_bad_connect_params_are_config_errors(params: dict[str, Any], needle: str) -> None:
    rm = Manager()
    with pytest.raises(ConfigError, match="'redis_conn'") as info:
        rm.load_from_root_config(_config(addr="127.0.0.1:1", **params))
    assert needle in str(info.value)
