"""What the Redis operators share: their common params, their key, and how they report an error.

``transform_redis_get``, ``transform_redis_set`` and
``transform_redis_zrangebyscore`` derive from :class:`RedisOperator`. It
reads the params each of them takes the same way (``resource_name``,
``key_prefix``, ``fail_on_error``), builds the key, and turns a Redis error
into the operator's warning (and, with ``fail_on_error: true``, a failed
request). Talking to Redis (borrowing the client, running commands within
the request's deadline) is :mod:`._redis`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import redis

from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput
from ..engine._template import is_template
from ._redis import key_suffix

__all__ = [
    "DATA_TYPES",
    "RESOURCE_NAME_PARAM",
    "VALUE_PARAMS",
    "RedisOperator",
    "data_type",
    "fail_on_error_param",
    "log",
]

log = logging.getLogger("pineapple.operators.redis")
"""The logger of every Redis operator."""

RESOURCE_NAME_PARAM = ParamSpec(
    type="string",
    required=True,
    description="Name of a redis_connection resource to borrow the client from.",
)

VALUE_PARAMS: dict[str, ParamSpec] = {
    "resource_name": RESOURCE_NAME_PARAM,
    "key_prefix": ParamSpec(
        type="string",
        required=True,
        templatable=True,
        description="Key prefix prepended to the suffix built from common_input fields. "
        "Supports {{field}} interpolation.",
    ),
    "data_type": ParamSpec(
        type="string", default="string", description='Redis data type: "set", "string", or "list".'
    ),
}
"""The params that say where a value lives and its type (``transform_redis_get`` and ``_set``)."""

DATA_TYPES = ("string", "set", "list")
"""The values of the ``data_type`` param."""


def fail_on_error_param(otherwise: str = "") -> ParamSpec:
    """The ``fail_on_error`` param (default false); ``otherwise``: what an error does without it."""
    tail = f" {otherwise}" if otherwise else ""
    return ParamSpec(
        type="bool", default=False, description=f"Fail the request on a Redis error{tail}."
    )


def data_type(params: dict[str, Any], operator: str) -> str:
    """The ``data_type`` param (``string`` when unset); raises ``ValueError`` for another value."""
    value = params.get("data_type") or "string"
    if value not in DATA_TYPES:
        raise ValueError(f'{operator}: unsupported data_type "{value}"')
    return str(value)


class RedisOperator(Operator):
    """The common part of a Redis operator (see the module docs).

    A ``key_prefix`` that is a ``{{field}}`` template is resolved per request
    (``inp.templated``); only ``fail_on_error: true`` fails the request.
    """

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = str(params["resource_name"])
        prefix = params.get("key_prefix", "")
        self.key_prefix = "" if is_template(prefix) else str(prefix)
        self.fail_on_error = params.get("fail_on_error") is True

    def key(self, inp: OperatorInput, fields: Sequence[str]) -> str:
        """This request's key prefix + the values of the common ``fields`` joined by ``:``."""
        prefix = inp.templated.get("key_prefix", self.key_prefix)
        return f"{prefix}{key_suffix(inp.common, fields)}"

    def redis_failed(self, out: OperatorOutput, message: str, exc: redis.RedisError) -> None:
        """Log ``message`` and make it the warning; raise it when ``fail_on_error``."""
        log.warning("%s", message)
        out.warn(message)
        if self.fail_on_error:
            raise RuntimeError(message) from exc
