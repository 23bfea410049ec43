"""``transform_redis_set``: writes a common field to Redis (string, set or list) with a TTL."""

from __future__ import annotations

from typing import Any

import redis

from .._context import Context
from .._params import ParamSpec
from ..engine import OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import format_value, go_type_name
from ..engine._template import is_template
from ._redis import borrow_redis, run_commands
from ._redis_operator import VALUE_PARAMS, RedisOperator, data_type, fail_on_error_param, log

__all__ = ["SCHEMA", "TransformRedisSet"]

SCHEMA = OperatorSchema(
    name="transform_redis_set",
    kind="transform",
    description="Generic Redis write operator. Writes a value by key with optional TTL.",
    blocking=True,
    params={
        **VALUE_PARAMS,
        "ttl": ParamSpec(
            type="int",
            default=0,
            templatable=True,
            description="TTL in seconds. 0 means no expiry. Supports {{field}} interpolation.",
        ),
        "fail_on_error": fail_on_error_param("instead of logging and continuing"),
    },
)


class TransformRedisSet(RedisOperator):
    """Key = prefix + all but the last common input joined by ':'; value = the last one."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        self.data_type = data_type(params, "transform_redis_set")
        ttl = params.get("ttl", 0)
        if isinstance(ttl, bool) or not (isinstance(ttl, int | float) or is_template(ttl)):
            raise ValueError(f"transform_redis_set: ttl must be numeric, got {go_type_name(ttl)}")
        self.ttl = 0 if isinstance(ttl, str) else int(ttl)

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        with borrow_redis(ctx, self.resource_name) as client:
            if client is None:
                return
            fields = self.meta.common_input
            if len(fields) < 2:
                raise ValueError(
                    "transform_redis_set: common_input must have at least 2 fields "
                    "(key fields + value field)"
                )
            ttl = inp.templated.get("ttl", self.ttl)
            key = self.key(inp, fields[:-1])
            value = inp.common.get(fields[-1])
            try:
                self._write(client, ctx, key, value, ttl)
            except redis.RedisError as exc:
                self.redis_failed(out, f"transform_redis_set: write key {key}: {exc}", exc)

    def _write(self, client: redis.Redis, ctx: Context, key: str, value: Any, ttl: int) -> None:
        if self.data_type == "string":
            if not isinstance(value, str):
                log.warning("transform_redis_set: value for key %s is not string", key)
                return
            command: tuple[Any, ...] = (
                ("SET", key, value, "EX", ttl) if ttl > 0 else ("SET", key, value)
            )
            run_commands(client, ctx, self.name, [command])
            return
        if not isinstance(value, list):
            log.warning("transform_redis_set: value for key %s is not []string", key)
            return
        members = [format_value(v) for v in value]
        if not members:
            return
        commands: list[tuple[Any, ...]] = [
            ("DEL", key),
            ("SADD" if self.data_type == "set" else "RPUSH", key, *members),
        ]
        if ttl > 0:
            commands.append(("EXPIRE", key, ttl))
        run_commands(client, ctx, self.name, commands)


register_operator(SCHEMA, TransformRedisSet)
