"""Borrowing a Redis client for an operator, and building keys from common fields.

Contract with the ``redis_connection`` resource type: the resource's value
IS a ``redis.Redis`` client. A borrow that fails (no provider in the
context, resource unknown or not loaded, value of another type) yields
``None`` and the operator degrades silently; the handle is always released.

Deadline: when the request's context has one, :func:`run_commands` sends the
commands on a pooled connection itself and waits for each reply at most the
time left (``ctx.remaining()``), with no retry: a stopped or silent server
costs the request its deadline, not the client's 2 s socket timeout twice.
A timeout once the deadline has passed raises
:class:`~pineapple.DeadlineExceededError` (HTTP 504), which the operators'
``except redis.RedisError`` does not swallow. Without a deadline the client's
own path (its timeouts and retry) runs unchanged. The wait for a free pooled
connection and a new connection's TCP connect stay bounded by the resource's
``pool_timeout_ms`` and ``dial_timeout_ms``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from .. import resource
from .._context import Context
from .._errors import DeadlineExceededError
from .._params import ParamSpec
from ..engine._gofmt import format_value

__all__ = [
    "DATA_TYPE_PARAM",
    "KEY_PREFIX_PARAM",
    "RESOURCE_NAME_PARAM",
    "borrow_redis",
    "key_suffix",
    "run_commands",
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


_MIN_WAIT = 0.001
"""The shortest reply wait handed to a socket (0 would make it non-blocking)."""
_SLACK = 0.01
"""A timeout this close to the deadline is the deadline's."""


def run_commands(
    client: redis.Redis, ctx: Context, operator: str, commands: Sequence[Sequence[Any]]
) -> list[Any]:
    """Run ``commands`` (``("GET", key)``, ...) in one round trip; their raw replies.

    Within ``ctx``'s deadline when it has one (see the module docs); the first
    error reply raises ``redis.ResponseError`` after every reply was read.
    """
    untyped: Any = client  # redis-py's command methods carry no annotations
    if ctx.deadline is None:
        if len(commands) == 1:
            return [untyped.execute_command(*commands[0])]
        pipe = untyped.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return list(pipe.execute())
    ctx.check_deadline(operator)
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    replies: list[Any] = []
    error: redis.ResponseError | None = None
    try:
        conn.send_packed_command(conn.pack_commands(commands), check_health=False)
        for _ in commands:  # bounded: one reply per command, each within the deadline
            wait = max(_MIN_WAIT, ctx.remaining() or 0.0)
            try:
                replies.append(conn.read_response(timeout=wait))
            except redis.ResponseError as exc:  # the connection stays in step
                error = error or exc
                replies.append(exc)
    except redis.TimeoutError as exc:
        # Socket timeouts may fire a hair before the monotonic clock reaches the deadline.
        if (ctx.remaining() or 0.0) <= _SLACK:
            raise DeadlineExceededError(
                f'deadline exceeded in operator "{operator}" (waiting for Redis)',
                operator=operator,
            ) from exc
        raise
    except BaseException:
        conn.disconnect()  # a reply may still be in flight: never reuse this socket
        raise
    finally:
        pool.release(conn)
    if error is not None:
        raise error
    return replies
