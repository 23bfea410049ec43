"""Borrowing a Redis client for an operator, and building keys from common fields.

Contract with the ``redis_connection`` resource type: the resource's value
IS a ``redis.Redis`` client. A borrow that fails (no provider in the
context, resource unknown or not loaded, value of another type) yields
``None`` and the operator degrades silently; the handle is always released.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from .. import resource
from .._context import Context
from .._params import ParamSpec
from ..engine import format_value

__all__ = [
    "DATA_TYPE_PARAM",
    "KEY_PREFIX_PARAM",
    "RESOURCE_NAME_PARAM",
    "borrow_redis",
    "key_suffix",
    "text",
]

RESOURCE_NAME_PARAM = ParamSpec(
    type="string",
    required=True,
    description="Name of a redis_connection resource to borrow the client from.",
)
KEY_PREFIX_PARAM = ParamSpec(
    type="string",
    required=True,
    templatable=True,
    description="Key prefix prepended to the suffix built from common_input fields. "
    "Supports {{field}} interpolation.",
)
DATA_TYPE_PARAM = ParamSpec(
    type="string",
    default="string",
    description='Redis data type: "set", "string", or "list".',
)


@contextmanager
def borrow_redis(ctx: Context, name: str) -> Iterator[redis.Redis | None]:
    """The named client for the duration of the block, or None (degrade)."""
    provider = resource.from_context(ctx)
    handle = provider.get(name) if provider is not None else None
    if handle is None:
        yield None
        return
    try:
        value = handle.value
        yield value if isinstance(value, redis.Redis) else None
    finally:
        handle.release()


def key_suffix(common: Mapping[str, Any], fields: Sequence[str]) -> str:
    """Common field values (Go ``%v`` text) joined by ``:``."""
    return ":".join(format_value(common.get(f)) for f in fields)


def text(value: Any) -> str:
    """A Redis reply element as str (clients without ``decode_responses`` return bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
