"""``transform_redis_set``: writes a common field to Redis (string, set or list) with a TTL."""

from __future__ import annotations

import logging
from typing import Any

import redis

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import format_value, go_type_name
from ..engine._template import is_template
from ._redis import (
    DATA_TYPE_PARAM,
    KEY_PREFIX_PARAM,
    RESOURCE_NAME_PARAM,
    borrow_redis,
    key_suffix,
    run_commands,
)

__all__ = ["SCHEMA", "TransformRedisSet"]

_log = logging.getLogger("pineapple.operators.redis")

SCHEMA = OperatorSchema(
    name="transform_redis_set",
    kind="transform",
    description="Generic Redis write operator. Writes a value by key with optional TTL.",
    blocking=True,
    params={
        "resource_name": RESOURCE_NAME_PARAM,
        "key_prefix": KEY_PREFIX_PARAM,
        "data_type": DATA_TYPE_PARAM,
        "ttl": ParamSpec(
            type="int",
            default=0,
            templatable=True,
            description="TTL in seconds. 0 means no expiry. Supports {{field}} interpolation.",
        ),
        "fail_on_error": ParamSpec(
            type="bool",
            default=False,
            description="Fail the request on a Redis error instead of logging and continuing.",
        ),
    },
)


class TransformRedisSet(Operator):
    """Key = prefix + all but the last common input joined by ':'; value = the last one."""

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = str(params["resource_name"])
        prefix = params["key_prefix"]
        self.key_prefix = "" if is_template(prefix) else str(prefix)
        self.data_type = params.get("data_type") or "string"
        if self.data_type not in ("string", "set", "list"):
            raise ValueError(f'transform_redis_set: unsupported data_type "{self.data_type}"')
        ttl = params.get("ttl", 0)
        if isinstance(ttl, bool) or not (isinstance(ttl, int | float) or is_template(ttl)):
            raise ValueError(f"transform_redis_set: ttl must be numeric, got {go_type_name(ttl)}")
        self.ttl = 0 if isinstance(ttl, str) else int(ttl)
        self.fail_on_error = params.get("fail_on_error") is True

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
            prefix = inp.templated.get("key_prefix", self.key_prefix)
            ttl = inp.templated.get("ttl", self.ttl)
            key = f"{prefix}{key_suffix(inp.common, fields[:-1])}"
            value = inp.common.get(fields[-1])
            try:
                self._write(client, ctx, key, value, ttl)
            except redis.RedisError as exc:
                message = f"transform_redis_set: write key {key}: {exc}"
                _log.warning("%s", message)
                if self.fail_on_error:
                    raise RuntimeError(message) from exc
                out.warn(message)

    def _write(self, client: redis.Redis, ctx: Context, key: str, value: Any, ttl: int) -> None:
        if self.data_type == "string":
            if not isinstance(value, str):
                _log.warning("transform_redis_set: value for key %s is not string", key)
                return
            command: tuple[Any, ...] = (
                ("SET", key, value, "EX", ttl) if ttl > 0 else ("SET", key, value)
            )
            run_commands(client, ctx, self.name, [command])
            return
        if not isinstance(value, list):
            _log.warning("transform_redis_set: value for key %s is not []string", key)
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
