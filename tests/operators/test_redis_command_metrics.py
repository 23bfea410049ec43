"""``run_commands`` reports every command to the client's ``record_command`` hook, with
Go's status (ok / timeout / pool_timeout / error), on both paths (with and without a
deadline), against the real Redis, a paused proxy of the test's own and a closed port."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from pineapple import Context, DeadlineExceededError
from pineapple.operators._redis import command_status, run_commands
from pineapple.resource._client_metrics import MAX_COMMANDS
from pineapple.resource.lowlevel import CommandStats
from resources import RedisConnection, RedisConnectionFetcher
from tests.reliability._deadline import PausableProxy

pytestmark = pytest.mark.redis


def _client(addr: str, **params: Any) -> RedisConnection:
    base = {
        "addr": addr,
        "dial_timeout_ms": 500,
        "read_timeout_ms": 2000,
        "write_timeout_ms": 2000,
        "pool_timeout_ms": 2000,
        "probe_interval_ms": 0,
    }
    return RedisConnectionFetcher({**base, **params})()


def _ctx(timeout: float | None) -> Context:
    """A context made when the test runs (a deadline made at collection would have passed)."""
    return Context() if timeout is None else Context().with_timeout(timeout)


def _counts(client: RedisConnection) -> dict[tuple[str, str], int]:
    return {(c.command, c.status): c.count for c in client.command_stats.report()}


@pytest.fixture
def client(redis_addr: str) -> Iterator[RedisConnection]:
    c = _client(redis_addr, pool_size=1, pool_timeout_ms=100)
    yield c
    c.close()


@pytest.fixture
def key(client: RedisConnection) -> Iterator[str]:
    k = f"pineapple-test:{uuid.uuid4().hex}"
    yield k
    client.delete(k)


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["plain", "deadline"])
def test_ok_and_error_replies_per_command(
    client: RedisConnection, key: str, timeout: float | None
) -> None:
    ctx = _ctx(timeout)
    assert run_commands(client, ctx, "op", [("GET", key)]) == [None]  # a miss is ok
    with pytest.raises(redis.ResponseError):  # INCR of a non-number: an error reply
        run_commands(client, ctx, "op", [("SET", key, "x"), ("INCR", key), ("GET", key)])
    assert _counts(client) == {("GET", "ok"): 2, ("SET", "ok"): 1, ("INCR", "error"): 1}


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["plain", "deadline"])
def test_pool_timeout_when_the_only_connection_is_busy(
    client: RedisConnection, key: str, timeout: float | None
) -> None:
    ctx = _ctx(timeout)
    held = client.connection_pool.get_connection()
    try:
        assert client.pool_counts() == (1, 0)
        with pytest.raises(redis.ConnectionError):
            run_commands(client, ctx, "op", [("GET", key)])
    finally:
        client.connection_pool.release(held)
    assert client.pool_counts() == (1, 1)
    assert _counts(client) == {("GET", "pool_timeout"): 1}


def test_timeout_against_a_paused_connection(redis_addr: str) -> None:
    host, _, port = redis_addr.rpartition(":")
    proxy = PausableProxy((host, int(port)))
    proxy.pause()
    plain = _client(proxy.addr, read_timeout_ms=200, write_timeout_ms=200)
    bounded = _client(proxy.addr)
    try:
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):  # the client's socket timeout (and one retry)
            run_commands(plain, Context(), "op", [("GET", "k")])
        with pytest.raises(DeadlineExceededError):  # the request's deadline
            run_commands(bounded, Context().with_timeout(0.3), "op", [("GET", "k")])
        assert time.monotonic() - started < 10
    finally:
        plain.close()
        bounded.close()
        proxy.close()
    assert _counts(plain) == {("GET", "timeout"): 1}
    assert _counts(bounded) == {("GET", "timeout"): 1}
    ((cell,),) = (bounded.command_stats.report(),)
    assert cell.sum_seconds >= 0.2


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["plain", "deadline"])
def test_refused_is_error(timeout: float | None) -> None:
    ctx = _ctx(timeout)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    client = _client(closed)
    try:
        with pytest.raises(redis.ConnectionError):
            run_commands(client, ctx, "op", [("GET", "k")])
    finally:
        client.close()
    assert _counts(client) == {("GET", "error"): 1}


def test_a_plain_client_without_the_hook_still_works(redis_addr: str) -> None:
    host, _, port = redis_addr.rpartition(":")
    plain = redis.Redis(host=host, port=int(port))
    try:
        assert run_commands(plain, Context(), "op", [("PING",)]) == [True]
    finally:
        plain.close()


def test_status_classes() -> None:
    assert command_status(redis.TimeoutError("Timeout reading from socket")) == "timeout"
    assert command_status(DeadlineExceededError("late", operator="op")) == "timeout"
    assert command_status(redis.ConnectionError("No connection available.")) == "pool_timeout"
    assert command_status(redis.ConnectionError("Error 111 connecting")) == "error"
    assert command_status(redis.ResponseError("WRONGTYPE")) == "error"


def test_command_stats_are_bounded_and_check_the_status() -> None:
    stats = CommandStats()
    for i in range(MAX_COMMANDS + 10):  # bounded: a few more than the limit
        stats.record(f"cmd{i}", 0.001, "ok")
    names = {cell.command for cell in stats.report()}
    assert len(names) == MAX_COMMANDS + 1 and "OTHER" in names
    with pytest.raises(ValueError, match="status"):
        stats.record("GET", 0.001, "slow")
    stats = CommandStats()
    stats.record("get", 20.0, "timeout")  # past every bound: the last bucket
    (cell,) = stats.report()
    assert (cell.command, cell.count, cell.buckets[-1], sum(cell.buckets)) == ("GET", 1, 1, 1)
