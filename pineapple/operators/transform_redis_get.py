"""``transform_redis_get``: reads a string, set or list from Redis into common fields."""

from __future__ import annotations

from typing import Any

import redis

from .._context import Context
from ..engine import OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._redis import borrow_redis, run_commands, text
from ._redis_operator import VALUE_PARAMS, RedisOperator, data_type, fail_on_error_param

__all__ = ["SCHEMA", "TransformRedisGet"]

SCHEMA = OperatorSchema(
    name="transform_redis_get",
    kind="transform",
    description="Generic Redis read operator. Reads a value by key and outputs the result "
    "and a cache-hit flag.",
    blocking=True,
    params={
        **VALUE_PARAMS,
        "fail_on_error": fail_on_error_param("instead of treating it as a cache miss"),
    },
)

_COMMANDS = {"string": "Get", "set": "SMembers", "list": "LRange"}


class TransformRedisGet(RedisOperator):
    """``common_output = [result, cache_hit]``; key = prefix + common inputs joined by ':'.

    Set members are returned sorted (Redis sets have no order).
    """

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        self.data_type = data_type(params, "transform_redis_get")

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
            key = self.key(inp, self.meta.common_input)
            try:
                value = self._read(client, ctx, key)
            except redis.RedisError as exc:
                command = _COMMANDS[self.data_type]
                self.redis_failed(out, f"transform_redis_get: {command}({key}): {exc}", exc)
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
