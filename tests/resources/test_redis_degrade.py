"""redis_connection with the engine's Redis operators while Redis goes down and comes back."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from pineapple import builtins
from pineapple.engine import OperatorInput, OperatorOutput, build_operator
from pineapple.resource import Manager, with_resources

pytestmark = pytest.mark.redis


def _op(type_name: str, **params: Any) -> Any:
    meta = {"common_input": ["uid"], "common_output": ["result", "cache_hit"]}
    if type_name == "transform_redis_set":
        meta = {"common_input": ["uid", "payload"], "common_output": []}
    op, _ = build_operator(
        type_name,
        {"resource_name": "redis_conn", **params},
        meta,
        registry=builtins.operator_registry(),
    )
    return op


def _run(op: Any, ctx: Any, common: dict[str, Any]) -> OperatorOutput:
    out = OperatorOutput()
    op.execute(ctx, OperatorInput(common, []), out)
    return out


def test_get_and_set_degrade_while_redis_is_down_and_recover(redis_proxy: Any) -> None:
    prefix = f"pineapple:test:{uuid.uuid4().hex[:8]}:"
    rm = Manager(builtins.resource_registry())
    rm.load_from_root_config(
        {
            "resource_config": {
                "redis_conn": {
                    "type": "redis_connection",
                    "params": {"addr": f"127.0.0.1:{redis_proxy.port}", "dial_timeout_ms": 500},
                }
            }
        }
    )
    rm.start()
    ctx = with_resources(None, rm)
    get = _op("transform_redis_get", key_prefix=prefix)
    strict_get = _op("transform_redis_get", key_prefix=prefix, fail_on_error=True)
    put = _op("transform_redis_set", key_prefix=prefix)
    try:
        assert _run(put, ctx, {"uid": "u1", "payload": "hello"}).warning is None
        out = _run(get, ctx, {"uid": "u1"})
        assert out.common_writes == {"result": "hello", "cache_hit": True}

        redis_proxy.down()
        started = time.monotonic()
        out = _run(get, ctx, {"uid": "u1"})
        assert out.common_writes == {"cache_hit": False}
        assert out.warning is not None and "transform_redis_get" in out.warning
        out = _run(put, ctx, {"uid": "u1", "payload": "lost"})
        assert out.warning is not None and out.common_writes is None
        with pytest.raises(RuntimeError, match="transform_redis_get"):
            _run(strict_get, ctx, {"uid": "u1"})
        assert time.monotonic() - started < 5  # refused fast: no long retry loop

        redis_proxy.up()  # same client, no refresh (interval -1): the pool reconnects
        out = _run(get, ctx, {"uid": "u1"})
        assert out.common_writes == {"result": "hello", "cache_hit": True}
        handle = rm.get("redis_conn")
        assert handle is not None
        with handle as client:
            client.delete(f"{prefix}u1")
    finally:
        rm.stop()
