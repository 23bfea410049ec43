"""``redis_connection``: a shared Redis client owning one connection pool.

The value is a :class:`RedisConnection`, a :class:`redis.Redis` client built
with ``from_pool``: it
owns a bounded, thread-safe ``BlockingConnectionPool``. Operators
(``transform_redis_get`` / ``_set`` / ``_zrangebyscore``) borrow the client per
request and run commands on it; they never close it. The runtime calls
``client.close()`` exactly once, after the last borrow of a retired value is
released, and that disconnects every connection of the pool.

Every fetch builds a new client and pings it, so a wrong address or password
fails ``Manager.start`` (or a refresh, keeping the old client) with a clear
error that names the address and never the password. ``lazy_connect: true``
skips that ping (the public engines' behaviour: their clients connect on the
first command).
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from pineapple import ConfigError, ParamSpec, ResourceSchema, register_resource
from pineapple.resource import redact

from ._errors import SourceError

__all__ = [
    "REDIS_CONNECTION_SCHEMA",
    "RedisConnection",
    "RedisConnectionFetcher",
    "RedisConnectionPrinter",
    "parse_addr",
]

DEFAULT_POOL_SIZE = 50
DEFAULT_TIMEOUT_MS = 2000


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` -> ``(host, port)``; :class:`ConfigError` naming ``addr`` otherwise."""
    host, sep, port_text = addr.strip().rpartition(":")
    host = host.strip("[]")  # "[::1]:6379"
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"parameter 'addr': expected 'host:port', got {addr!r}")
    return host, int(port_text)


def _positive_ms(params: dict[str, Any], name: str) -> float:
    value = int(params[name])
    if value <= 0:
        raise ConfigError(f"parameter {name!r}: must be > 0 milliseconds, got {value}")
    return value / 1000.0


class RedisConnection(redis.Redis):
    """A :class:`redis.Redis` client that owns its connection pool; ``close()`` is idempotent.

    ``close()`` disconnects every connection of the pool. redis-py also calls
    ``close()`` from ``__del__``; only the first call does anything, so the
    pool is torn down exactly once (by the runtime, after the last borrow).
    """

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return bool(getattr(self, "_pineapple_closed", False))

    def close(self) -> None:
        """Disconnect the pool (first call only)."""
        if self.closed:
            return
        self._pineapple_closed = True
        super().close()


class RedisConnectionFetcher:
    """Builds, pings and returns a new :class:`redis.Redis` client per call.

    Construction validates the params and does no I/O.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        self.host, self.port = parse_addr(str(params["addr"]))
        self.db = int(params.get("db", 0))
        if self.db < 0:
            raise ConfigError(f"parameter 'db': must be >= 0, got {self.db}")
        pool_size = int(params.get("pool_size", 0))
        if pool_size < 0:
            raise ConfigError(f"parameter 'pool_size': must be >= 0, got {pool_size}")
        self.pool_size = pool_size or DEFAULT_POOL_SIZE
        self.connect_timeout = _positive_ms(params, "dial_timeout_ms")
        # redis-py has one socket timeout for reads and writes.
        self.socket_timeout = max(
            _positive_ms(params, "read_timeout_ms"), _positive_ms(params, "write_timeout_ms")
        )
        self.pool_timeout = _positive_ms(params, "pool_timeout_ms")
        self._password: str | None = params.get("password") or None
        self.lazy_connect = bool(params.get("lazy_connect", False))

    @property
    def addr(self) -> str:
        """``host:port`` of the server (no credentials)."""
        return f"{self.host}:{self.port}"

    def new_client(self) -> RedisConnection:
        """A new client over a new pool; no connection is opened yet."""
        pool = redis.BlockingConnectionPool(  # type: ignore[no-untyped-call]
            max_connections=self.pool_size,
            timeout=self.pool_timeout,
            host=self.host,
            port=self.port,
            db=self.db,
            password=self._password,
            socket_timeout=self.socket_timeout,
            socket_connect_timeout=self.connect_timeout,
            # One quick retry covers a pooled connection the server has closed;
            # more would only delay the degradation path when Redis is down.
            retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
            health_check_interval=30,
            # No handshake on connect (RESP2: no HELLO; no CLIENT SETINFO): against a
            # silent server a new connection would wait the socket timeout twice (one
            # retry) inside the pool, where the request's deadline cannot reach it.
            # Only AUTH (with a password) and SELECT (db > 0) remain.
            protocol=2,
            driver_info=None,
        )
        client = RedisConnection.from_pool(pool)
        assert isinstance(client, RedisConnection)
        return client

    def __call__(self) -> RedisConnection:
        client = self.new_client()
        if self.lazy_connect:
            return client  # the first command connects, as the Go engine's client does
        try:
            client.ping()
        except redis.RedisError as exc:
            client.close()
            secrets = [self._password] if self._password else []
            reason = redact(f"{type(exc).__name__}: {exc}", secrets)
            raise SourceError(
                f"cannot reach Redis at {self.addr} (db {self.db}): {reason}"
            ) from None
        return client


class RedisConnectionPrinter:
    """Address, db and pool settings of a client; never its password."""

    def summarize(self, value: Any) -> str:
        kwargs = value.connection_pool.connection_kwargs
        return (
            f"redis {kwargs.get('host')}:{kwargs.get('port')} db {kwargs.get('db', 0)}, "
            f"pool max {value.connection_pool.max_connections}"
        )

    def describe(self, value: Any) -> str:
        pool = value.connection_pool
        kwargs = pool.connection_kwargs
        lines = [
            self.summarize(value),
            f"auth: {'password set' if kwargs.get('password') else 'none'}",
            f"connect timeout: {kwargs.get('socket_connect_timeout')}s",
            f"socket timeout: {kwargs.get('socket_timeout')}s",
            f"pool wait timeout: {getattr(pool, 'timeout', None)}s",
        ]
        return "\n".join(lines)


REDIS_CONNECTION_SCHEMA = ResourceSchema(
    name="redis_connection",
    description=(
        "A shared redis.Redis client owning a bounded connection pool; borrowed by the "
        "Redis operators through resource_name, closed after its last borrow. Pinged on "
        "every load, so a wrong address fails start."
    ),
    default_interval=-1,
    params={
        "addr": ParamSpec(type="string", required=True, description="Server address, host:port."),
        "password": ParamSpec(type="string", default="", description="Password (AUTH); secret."),
        "db": ParamSpec(type="int", default=0, description="Database number."),
        "pool_size": ParamSpec(
            type="int",
            default=0,
            description=f"Maximum connections in the pool; 0: {DEFAULT_POOL_SIZE}.",
        ),
        "dial_timeout_ms": ParamSpec(
            type="int", default=DEFAULT_TIMEOUT_MS, description="TCP connect timeout in ms."
        ),
        "read_timeout_ms": ParamSpec(
            type="int",
            default=DEFAULT_TIMEOUT_MS,
            description="Per-command socket timeout in ms (max of read and write is used).",
        ),
        "write_timeout_ms": ParamSpec(
            type="int",
            default=DEFAULT_TIMEOUT_MS,
            description="Per-command socket timeout in ms (max of read and write is used).",
        ),
        "pool_timeout_ms": ParamSpec(
            type="int",
            default=DEFAULT_TIMEOUT_MS,
            description="How long a borrower waits for a free pooled connection, in ms.",
        ),
        "lazy_connect": ParamSpec(
            type="bool",
            default=False,
            description=(
                "Skip the ping at load: the pool connects on its first command, as the Go "
                "engine's client does (an unreachable server then fails commands, not start)."
            ),
        ),
        "metrics_name": ParamSpec(
            type="string",
            default="",
            description="Accepted for config compatibility with the other engines; unused.",
        ),
    },
    printer=RedisConnectionPrinter(),
)

register_resource(REDIS_CONNECTION_SCHEMA, RedisConnectionFetcher)
