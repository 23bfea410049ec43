"""The Redis operators against the real Redis (a ``redis.Redis`` client is the resource value)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._run import CountingProvider, run

pytestmark = pytest.mark.redis

GET_META = {"common_input": ["uid"], "common_output": ["val", "hit"]}
SET_META = {"common_input": ["uid", "payload"]}


@pytest.fixture
def client(redis_addr: str) -> Iterator[redis.Redis]:
    host, _, port = redis_addr.rpartition(":")
    c = redis.Redis(host=host, port=int(port))
    yield c
    c.close()


@pytest.fixture
def prefix(client: redis.Redis) -> Iterator[str]:
    p = f"pineapple-test:{uuid.uuid4().hex[:8]}:"
    yield p
    for key in client.scan_iter(f"{p}*"):
        client.delete(key)


def _params(prefix: str, **extra: Any) -> dict[str, Any]:
    return {"resource_name": "rc", "key_prefix": prefix, **extra}


@pytest.mark.parametrize(
    ("data_type", "value"), [("string", "hello"), ("set", ["b", "a", 3.0]), ("list", ["x", "y"])]
)
def test_set_then_get_round_trip(
    client: redis.Redis, prefix: str, data_type: str, value: Any
) -> None:
    provider = CountingProvider({"rc": client})
    run(
        "transform_redis_set",
        _params(prefix, data_type=data_type, ttl=60),
        SET_META,
        {"uid": "u1", "payload": value},
        ctx=provider.context(),
    )
    assert 0 < client.ttl(f"{prefix}u1") <= 60
    out = run(
        "transform_redis_get",
        _params(prefix, data_type=data_type),
        GET_META,
        {"uid": "u1"},
        ctx=provider.context(),
    )
    expected = {"set": ["3", "a", "b"], "list": ["x", "y"], "string": "hello"}[data_type]
    assert out.common_writes == {"val": expected, "hit": True}
    assert provider.borrowed == provider.released == 2


def test_miss_and_key_from_several_fields(client: redis.Redis, prefix: str) -> None:
    client.set(f"{prefix}a:2", "v")
    provider = CountingProvider({"rc": client})
    meta = {"common_input": ["k1", "k2"], "common_output": ["val", "hit"]}
    out = run(
        "transform_redis_get", _params(prefix), meta, {"k1": "a", "k2": 2.0}, ctx=provider.context()
    )
    assert out.common_writes == {"val": "v", "hit": True}
    out = run(
        "transform_redis_get", _params(prefix), GET_META, {"uid": "nobody"}, ctx=provider.context()
    )
    assert out.common_writes == {"hit": False}


@pytest.mark.parametrize("values", [{}, {"rc": "not a client"}])
def test_borrow_failure_degrades_silently(values: dict[str, Any]) -> None:
    provider = CountingProvider(values)
    out = run(
        "transform_redis_get",
        _params("p:", fail_on_error=True),
        GET_META,
        {"uid": "u"},
        ctx=provider.context(),
    )
    assert out.common_writes == {"hit": False} and out.warning is None
    out = run(
        "transform_redis_set",
        _params("p:", fail_on_error=True),
        SET_META,
        {"uid": "u", "payload": "x"},
        ctx=provider.context(),
    )
    assert out.used() == (False,) * 5
    assert provider.borrowed == provider.released
    assert run("transform_redis_get", _params("p:"), GET_META, {"uid": "u"}).common_writes == {
        "hit": False
    }


def test_command_errors_warn_or_raise_with_fail_on_error() -> None:
    dead = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    provider = CountingProvider({"rc": dead})
    out = run("transform_redis_get", _params("p:"), GET_META, {"uid": "u"}, ctx=provider.context())
    assert out.common_writes == {"hit": False}
    assert out.warning is not None and out.warning.startswith("transform_redis_get: Get(p:u): ")
    with pytest.raises(RuntimeError, match=r"transform_redis_get: Get\(p:u\)"):
        run(
            "transform_redis_get",
            _params("p:", fail_on_error=True),
            GET_META,
            {"uid": "u"},
            ctx=provider.context(),
        )
    out = run(
        "transform_redis_set",
        _params("p:"),
        SET_META,
        {"uid": "u", "payload": "x"},
        ctx=provider.context(),
    )
    assert out.warning is not None and "write key p:u" in out.warning
    with pytest.raises(RuntimeError, match="write key p:u"):
        run(
            "transform_redis_set",
            _params("p:", fail_on_error=True),
            SET_META,
            {"uid": "u", "payload": "x"},
            ctx=provider.context(),
        )
    assert provider.borrowed == provider.released == 4
    dead.close()


def test_zrangebyscore_window(client: redis.Redis, prefix: str) -> None:
    now = time.time()
    client.zadd(f"{prefix}u1", {"old": now - 1000, "new1": now - 5, "new2": now - 1})
    provider = CountingProvider({"rc": client})
    meta = {"common_input": ["uid"], "common_output": ["ids", "hit", "n"]}
    out = run(
        "transform_redis_zrangebyscore",
        _params(prefix, window_seconds=100),
        meta,
        {"uid": "u1"},
        ctx=provider.context(),
    )
    assert out.common_writes == {"ids": ["new1", "new2"], "hit": True, "n": 2}
    out = run(
        "transform_redis_zrangebyscore",
        _params(prefix),
        meta,
        {"uid": "u1"},
        ctx=CountingProvider({}).context(),
    )
    assert out.common_writes == {"ids": [], "hit": False, "n": 0}
