from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

import resources
from pineapple import ConfigError
from pineapple.resource import Manager, StartError
from pineapple.resource.lowlevel import default_registry, flush_closes

pytestmark = pytest.mark.redis

SECRET = "hunter2-very-secret"


def _config(**params: Any) -> dict[str, Any]:
    return {"resource_config": {"redis_conn": {"type": "redis_connection", "params": params}}}


def _count_closes(client: redis.Redis) -> list[int]:
    """Count disconnects of the client's pool (what ``client.close()`` does)."""
    pool = client.connection_pool
    calls = [0]
    original = pool.disconnect

    def counting(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        original(*args, **kwargs)

    pool.disconnect = counting  # type: ignore[method-assign]
    return calls


def test_schema_defaults() -> None:
    schema = default_registry().get("redis_connection")
    assert schema is resources.lowlevel.REDIS_CONNECTION_SCHEMA
    assert schema.default_interval == -1
    assert {"addr", "password", "db", "pool_size", "dial_timeout_ms"} <= set(schema.params)


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"addr": "localhost"}, "addr"),
        ({"addr": "localhost:notaport"}, "addr"),
        ({"addr": "127.0.0.1:6379", "db": -1}, "db"),
        ({"addr": "127.0.0.1:6379", "pool_size": -2}, "pool_size"),
        ({"addr": "127.0.0.1:6379", "read_timeout_ms": 0}, "read_timeout_ms"),
        ({"password": SECRET}, "addr"),
    ],
)
def test_bad_params_name_resource_and_param(params: dict[str, Any], param: str) -> None:
    rm = Manager()
    with pytest.raises(ConfigError) as info:
        rm.load_from_root_config(_config(**params))
    message = str(info.value)
    assert "'redis_conn'" in message
    assert f"'{param}'" in message
    assert SECRET not in message


def test_factory_does_no_io() -> None:
    # An unreachable address is fine until the first fetch.
    rm = Manager()
    assert rm.load_from_root_config(_config(addr="127.0.0.1:1")) == ["redis_conn"]


@pytest.mark.parametrize("fail_fast", [{"ping_at_start": True}, {"lazy_connect": False}])
def test_wrong_address_fails_start_with_a_clear_error_without_password(
    fail_fast: dict[str, bool],
) -> None:
    rm = Manager()
    rm.load_from_root_config(
        _config(addr="127.0.0.1:1", password=SECRET, dial_timeout_ms=500, **fail_fast)
    )
    with pytest.raises(StartError) as info:
        rm.start()
    message = str(info.value)
    assert "redis_conn" in message
    assert "cannot reach Redis at 127.0.0.1:1" in message
    assert SECRET not in message
    assert SECRET not in info.value.failures["redis_conn"]
    assert SECRET not in (rm.status_of("redis_conn").last_error or "")


def test_value_is_a_redis_client_shared_by_borrowers(redis_addr: str) -> None:
    rm = Manager()
    rm.load_from_root_config(_config(addr=redis_addr, pool_size=4))
    rm.start()
    try:
        handles = [rm.get("redis_conn") for _ in range(3)]
        clients = [h.value for h in handles if h is not None]
        assert len(clients) == 3
        assert all(isinstance(c, redis.Redis) for c in clients)
        assert clients[0] is clients[1] is clients[2]

        key = f"pineapple:test:{id(clients)}"
        errors: list[BaseException] = []
        barrier = threading.Barrier(3)

        def borrower(i: int, client: redis.Redis) -> None:
            try:
                barrier.wait(5)
                for n in range(50):
                    client.hset(key, f"{i}:{n}", n)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=borrower, args=(i, c)) for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert errors == []
        assert clients[0].hlen(key) == 150
        clients[0].delete(key)
        assert clients[0].connection_pool.max_connections == 4
        summary = rm.status_of("redis_conn").summary
        assert summary == f"redis {redis_addr} db 0, pool max 4"
        for h in handles:
            assert h is not None
            h.release()
    finally:
        rm.stop()


def test_replaced_client_is_closed_exactly_once_after_last_borrow(redis_addr: str) -> None:
    rm = Manager()
    rm.load_from_root_config(_config(addr=redis_addr, password=""))
    rm.start()
    try:
        first = rm.get("redis_conn")
        second = rm.get("redis_conn")
        assert first is not None and second is not None
        old = first.value
        closes = _count_closes(old)

        assert rm.refresh("redis_conn") == "swapped"
        replacement = rm.get("redis_conn")
        assert replacement is not None
        assert replacement.value is not old
        replacement.release()

        flush_closes()
        assert closes == [0]
        assert old.ping() is True  # still usable by its borrowers
        first.release()
        flush_closes()
        assert closes == [0]
        old.set("pineapple:test:last", "1")
        second.release()
        flush_closes()
        assert closes == [1]
        assert old.closed
        old.close()  # idempotent, as redis-py's __del__ calls it again
        assert closes == [1]

        new = rm.get("redis_conn")
        assert new is not None
        new_closes = _count_closes(new.value)
        new.release()
    finally:
        rm.stop()
    flush_closes()
    assert new_closes == [1]
    assert closes == [1]


def test_printer_never_shows_the_password(redis_addr: str) -> None:
    printer = resources.lowlevel.REDIS_CONNECTION_SCHEMA.printer
    assert printer is not None
    fetcher = resources.RedisConnectionFetcher(
        {
            "addr": redis_addr,
            "password": SECRET,
            "db": 0,
            "pool_size": 0,
            "dial_timeout_ms": 100,
            "read_timeout_ms": 100,
            "write_timeout_ms": 100,
            "pool_timeout_ms": 100,
        }
    )
    client = fetcher.new_client()  # not connected: no I/O
    try:
        text = printer.describe(client) + printer.summarize(client)
        assert SECRET not in text
        assert "password set" in text
    finally:
        client.close()
