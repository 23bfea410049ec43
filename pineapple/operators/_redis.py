"""Borrowing a Redis client for an operator, and building keys from common fields.

Contract with the ``redis_connection`` resource type: the resource's value
IS a ``redis.Redis`` client. A borrow that fails (no provider in the
context, resource unknown or not loaded, value of another type) yields
``None`` and the operator degrades silently; the handle is always released.
What the operators share beyond talking to Redis (params, key, error
reporting) is :mod:`._redis_operator`.

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

Metrics: :func:`run_commands` times each round trip and reports every command
in it to the client's ``record_command`` hook when it has one (the
``redis_connection`` value does; ``pineapple.operators`` does not import
``resources``), classified as Go does: ``ok`` (a nil reply too), ``timeout``,
``pool_timeout`` or ``error``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from .. import resource
from .._context import Context
from .._errors import DeadlineExceededError
from ..engine._gofmt import format_value

__all__ = ["borrow_redis", "command_status", "key_suffix", "run_commands", "text"]


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
_POOL_EXHAUSTED = "No connection available"
"""How redis-py's ``BlockingConnectionPool`` says every connection stayed busy past its timeout."""


def command_status(exc: BaseException) -> str:
    """Go's ``status`` label of a failed command: ``timeout`` (a socket timeout or the
    request's deadline), ``pool_timeout`` (no pooled connection freed in time) or ``error``."""
    if isinstance(exc, redis.TimeoutError | DeadlineExceededError):
        return "timeout"
    if isinstance(exc, redis.ConnectionError) and str(exc).startswith(_POOL_EXHAUSTED):
        return "pool_timeout"
    return "error"


def run_commands(
    client: redis.Redis, ctx: Context, operator: str, commands: Sequence[Sequence[Any]]
) -> list[Any]:
    """Run ``commands`` (``("GET", key)``, ...) in one round trip; their raw replies.

    Within ``ctx``'s deadline when it has one (see the module docs); the first
    error reply raises ``redis.ResponseError`` after every reply was read.
    When the client has a ``record_command(command, seconds, status)`` hook
    (``resources.RedisConnection``), every command is reported through it with
    the round trip's time and its status (see :func:`command_status`; an error
    reply is ``error``, a nil reply ``ok``).
    """
    record = getattr(client, "record_command", None)
    started = time.monotonic() if record is not None else 0.0
    try:
        replies = _round_trip(client, ctx, operator, commands)
    except Exception as exc:
        if record is not None:
            took, status = time.monotonic() - started, command_status(exc)
            for command in commands:  # bounded: the operator's commands
                record(_command_name(command), took, status)
        raise
    error: redis.ResponseError | None = None
    took = time.monotonic() - started
    for command, reply in zip(commands, replies, strict=True):  # bounded: as above
        failed = isinstance(reply, redis.ResponseError)
        if failed and error is None:
            error = reply
        if record is not None:
            record(_command_name(command), took, "error" if failed else "ok")
    if error is not None:
        raise error
    return replies


def _command_name(command: Sequence[Any]) -> str:
    name = command[0] if command else ""
    return name.decode("ascii", "replace") if isinstance(name, bytes) else str(name)


def _round_trip(
    client: redis.Redis, ctx: Context, operator: str, commands: Sequence[Sequence[Any]]
) -> list[Any]:
    """The replies of ``commands``, an error reply in place as its ``redis.ResponseError``."""
    untyped: Any = client  # redis-py's command methods carry no annotations
    if ctx.deadline is None:
        if len(commands) == 1:
            try:
                return [untyped.execute_command(*commands[0])]
            except redis.ResponseError as exc:
                return [exc]
        pipe = untyped.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return list(pipe.execute(raise_on_error=False))
    ctx.check_deadline(operator)
    pool = client.connection_pool
    conn: Any = pool.get_connection()
    replies: list[Any] = []
    try:
        conn.send_packed_command(conn.pack_commands(commands), check_health=False)
        for _ in commands:  # bounded: one reply per command, each within the deadline
            wait = max(_MIN_WAIT, ctx.remaining() or 0.0)
            try:
                replies.append(conn.read_response(timeout=wait))
            except redis.ResponseError as exc:  # the connection stays in step
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
    return replies
