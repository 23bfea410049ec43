"""``transform_redis_zrangebyscore``: reads the members of a sorted set scored in a time window."""

from __future__ import annotations

import time
from typing import Any

import redis

from .._context import Context
from .._params import ParamSpec
from ..engine import OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._redis import borrow_redis, run_commands, text
from ._redis_operator import RESOURCE_NAME_PARAM, RedisOperator, fail_on_error_param

__all__ = ["SCHEMA", "TransformRedisZrangebyscore"]

SCHEMA = OperatorSchema(
    name="transform_redis_zrangebyscore",
    kind="transform",
    description="Reads members of a Redis sorted set whose score (a unix time) lies within "
    "the last window_seconds; outputs the members, a hit flag and their count.",
    blocking=True,
    params={
        "resource_name": RESOURCE_NAME_PARAM,
        "key_prefix": ParamSpec(
            type="string",
            default="",
            templatable=True,
            description="Key prefix prepended to the common_input fields joined by ':'.",
        ),
        "window_seconds": ParamSpec(
            type="int",
            default=0,
            description="Only scores >= now - window_seconds; 0 reads the whole set.",
        ),
        "fail_on_error": fail_on_error_param(),
        "redis_addr": ParamSpec(type="string", description="Legacy; ignored."),
        "redis_password": ParamSpec(type="string", description="Legacy; ignored."),
        "bench_profile": ParamSpec(type="any", description="Accepted for compatibility; ignored."),
    },
)


class TransformRedisZrangebyscore(RedisOperator):
    """``common_output = [members, cache_hit, count]`` (count optional).

    Borrow failure or a Redis error (without ``fail_on_error``) yields
    ``[]``, ``false``, ``0``.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        window = params.get("window_seconds", 0)
        if isinstance(window, bool) or not isinstance(window, int | float):
            raise ValueError("transform_redis_zrangebyscore: window_seconds must be numeric")
        self.window = int(window)

    def prepare(self) -> None:
        outs = self.meta.common_output
        if len(outs) < 2:
            raise ValueError(
                "transform_redis_zrangebyscore: $metadata.common_output needs "
                "[members, cache_hit] and optionally [count]"
            )
        self.outs = outs[:3]

    def _emit(self, out: OperatorOutput, members: list[str]) -> None:
        out.set_common(self.outs[0], members)
        out.set_common(self.outs[1], bool(members))
        if len(self.outs) > 2:
            out.set_common(self.outs[2], len(members))

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        members: list[str] = []
        with borrow_redis(ctx, self.resource_name) as client:
            if client is not None:
                key = self.key(inp, self.meta.common_input)
                low: float | str = time.time() - self.window if self.window > 0 else "-inf"
                try:
                    (raw,) = run_commands(
                        client, ctx, self.name, [("ZRANGEBYSCORE", key, low, "+inf")]
                    )
                    members = [text(m) for m in raw]
                except redis.RedisError as exc:
                    message = f"transform_redis_zrangebyscore: ZRangeByScore({key}): {exc}"
                    self.redis_failed(out, message, exc)
        self._emit(out, members)


register_operator(SCHEMA, TransformRedisZrangebyscore)
