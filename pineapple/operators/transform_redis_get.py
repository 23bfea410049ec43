"""``transform_redis_get``: reads a string, set or list from Redis into common fields."""

from __future__ import annotations

import logging
from typing import Any

import redis

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._template import is_template
from ._redis import (
    DATA_TYPE_PARAM,
    KEY_PREFIX_PARAM,
    RESOURCE_NAME_PARAM,
    borrow_redis,
    key_suffix,
    run_commands,
    text,
)

__all__ = ["SCHEMA", "TransformRedisGet"]

_log = logging.getLogger("pineapple.operators.redis")

SCHEMA = OperatorSchema(
    name="transform_redis_get",
    kind="transform",
    description="Generic Redis read operator. Reads a value by key and outputs the result "
    "and a cache-hit flag.",
    blocking=True,
    params={
        "resource_name": RESOURCE_NAME_PARAM,
        "key_prefix": KEY_PREFIX_PARAM,
        "data_type": DATA_TYPE_PARAM,
        "fail_on_error": ParamSpec(
            type="bool",
            default=False,
            description="Fail the request on a Redis error instead of treating it as a cache miss.",
        ),
    },
)

_COMMANDS = {"string": "Get", "set": "SMembers", "list": "LRange"}


class TransformRedisGet(Operator):
    """``common_output = [result, cache_hit]``; key = prefix + common inputs joined by ':'.

    Set members are returned sorted (Redis sets have no order).
    """

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = str(params["resource_name"])
        prefix = params["key_prefix"]
        self.key_prefix = "" if is_template(prefix) else str(prefix)
        self.data_type = params.get("data_type") or "string"
        if self.data_type not in _COMMANDS:
            raise ValueError(f'transform_redis_get: unsupported data_type "{self.data_type}"')
        self.fail_on_error = params.get("fail_on_error") is True

    def prepare(self) -> None:
        if len(self.meta.common_output) < 2:
            raise ValueError(
                "transform_redis_get: $metadata.common_output needs [result, cache_hit]"
            )
        self.result_field, self.hit_field = self.meta.common_output[:2]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        with borrow_redis(ctx, self.resource_name) as client:
            if client is None:
                out.set_common(self.hit_field, False)
                return
            prefix = inp.templated.get("key_prefix", self.key_prefix)
            key = f"{prefix}{key_suffix(inp.common, self.meta.common_input)}"
            try:
                value = self._read(client, ctx, key)
            except redis.RedisError as exc:
                command = _COMMANDS[self.data_type]
                message = f"transform_redis_get: {command}({key}): {exc}"
                _log.warning("%s", message)
                out.warn(message)
                if self.fail_on_error:
                    raise RuntimeError(message) from exc
                out.set_common(self.hit_field, False)
                return
        if value:
            out.set_common(self.result_field, value)
            out.set_common(self.hit_field, True)
        else:
            out.set_common(self.hit_field, False)

    def _read(self, client: redis.Redis, ctx: Context, key: str) -> Any:
        if self.data_type == "string":
            (raw,) = run_commands(client, ctx, self.name, [("GET", key)])
            return None if raw is None else text(raw)
        if self.data_type == "set":
            (members,) = run_commands(client, ctx, self.name, [("SMEMBERS", key)])
            return sorted(text(m) for m in members)
        (values,) = run_commands(client, ctx, self.name, [("LRANGE", key, 0, -1)])
        return [text(m) for m in values]


register_operator(SCHEMA, TransformRedisGet)
