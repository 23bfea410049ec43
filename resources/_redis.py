"""``redis_connection``: a shared Redis client owning one connection pool.

The value is a :class:`RedisConnection`, a :class:`redis.Redis` client built
with ``from_pool``: it
owns a bounded, thread-safe ``BlockingConnectionPool``. Operators
(``transform_redis_get`` / ``_set`` / ``_zrangebyscore``) borrow the client per
request and run commands on it; they never close it. The runtime calls
``client.close()`` exactly once, after the last borrow of a retired value is
released, and that disconnects every connection of the pool.

Connecting is lazy by default, as the public engines' clients are: a load
builds the client without I/O, so a config that starts on the Go engine
starts here even while Redis is down (commands then fail and the operators
degrade). Reachability is learnt from a background PING probe (first at once,
then every ``probe_interval_ms``, 15 s as Go's) and reported through the
resource's ``Reachable`` status condition and the server's ``pine_redis_up`` /
``pine_redis_ping_duration_seconds`` metrics (label ``name``: ``metrics_name``,
else the resource name). ``ping_at_start: true`` keeps the fail-fast load: a
wrong address or password fails ``Manager.start`` (or a refresh, keeping the
old client) with an error that names the address and never the password.
``lazy_connect`` is the deprecated spelling of the same choice
(``lazy_connect: false`` means ``ping_at_start: true``).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from pineapple import ConfigError, ParamSpec, ResourceSchema, register_resource
from pineapple.resource.lowlevel import (
    ClientReport,
    CommandStats,
    ProbeReport,
    Reachability,
    redact,
)

from ._errors import SourceError

__all__ = [
    "REDIS_CONNECTION_SCHEMA",
    "RedisConnection",
    "RedisConnectionFetcher",
    "RedisConnectionPrinter",
    "parse_addr",
]

_log = logging.getLogger("pineapple.resources.redis")

DEFAULT_POOL_SIZE = 50
DEFAULT_TIMEOUT_MS = 2000
DEFAULT_PROBE_INTERVAL_MS = 15_000
"""Go's fixed ``redisProbeInterval``."""
MIN_PROBE_INTERVAL_MS = 100
_LAZY_LOCK = threading.Lock()
"""Guards the first creation of a client's :class:`CommandStats` (rare; never held long)."""


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

    ``close()`` stops the probe and disconnects every connection of the pool.
    redis-py also calls ``close()`` from ``__del__``; only the first call does
    anything, so the pool is torn down exactly once (by the runtime, after the
    last borrow).

    Guarantees (the probe thread):
    - It holds the client only through a weak reference between probes, so a
      client nobody closes can still be collected (``__del__`` then closes it).
    - Each probe is one PING bounded by the pool's timeouts (pool wait, dial,
      socket; one quick retry); between probes it waits on ``_probe_stop``,
      which ``close()`` sets, so it ends at most one probe after ``close()``.
      ``close()`` disconnects the pool first (waking a blocked PING) and then
      joins the thread for at most ``_PROBE_JOIN_S`` (never from the thread
      itself). A probe that ends after ``close()`` records nothing.
    """

    _PROBE_JOIN_S = 2.0

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return bool(getattr(self, "_pineapple_closed", False))

    @property
    def reachability(self) -> Reachability:
        """The record of this client's probes (created on first use)."""
        found: Reachability | None = getattr(self, "_pineapple_reachability", None)
        if found is None:
            found = self._pineapple_reachability = Reachability("redis")
        return found

    @property
    def command_stats(self) -> CommandStats:
        """Counts and latencies of the commands the operators sent (created on first use)."""
        found: CommandStats | None = getattr(self, "_pineapple_commands", None)
        if found is None:
            with _LAZY_LOCK:  # two first users must not each keep their own counts
                found = getattr(self, "_pineapple_commands", None)
                if found is None:
                    found = self._pineapple_commands = CommandStats()
        return found

    def record_command(self, command: str, seconds: float, status: str) -> None:
        """One command sent by an operator: ``status`` is ``ok`` (a cache miss too),
        ``timeout``, ``pool_timeout`` or ``error`` (the hook ``run_commands`` calls)."""
        self.command_stats.record(command, seconds, status)

    def pool_counts(self) -> tuple[int, int]:
        """``(total, idle)`` connections of the pool now (Go's ``PoolStats``); no I/O."""
        pool: Any = self.connection_pool
        count = getattr(pool, "get_connection_count", None)
        if count is not None:  # redis-py 8: [(idle, attrs), (in use, attrs)], under its lock
            (idle, _), (used, _) = count()
            return int(idle) + int(used), int(idle)
        # Older redis-py: the same reading by hand, unlocked (a gauge may be one off).
        idle = sum(1 for conn in list(pool.pool.queue) if conn is not None)  # bounded: pool size
        return len(pool._connections), idle

    def client_report(self) -> ClientReport:
        """The pool and the commands now (no I/O): see :mod:`pineapple.resource`'s ``Metered``."""
        total, idle = self.pool_counts()
        return ClientReport(
            "redis", self.reachability.label, total, idle, tuple(self.command_stats.report())
        )

    def probe_report(self) -> ProbeReport:
        """What the PING probes have seen (no I/O): see :mod:`pineapple.resource`'s ``Probed``."""
        return self.reachability.report()

    def probe(self) -> bool:
        """PING once now and record the result; True when the server answered."""
        kwargs = self.connection_pool.connection_kwargs
        where = f"{kwargs.get('host')}:{kwargs.get('port')} (db {kwargs.get('db', 0)})"
        started = time.monotonic()
        try:
            self.ping()
        except Exception as exc:  # any failure is "not reachable": recorded, never raised
            if not self.closed:
                message = f"PING to Redis at {where} failed: {type(exc).__name__}: {exc}"
                self.reachability.record(False, time.monotonic() - started, message)
            return False
        if not self.closed:
            self.reachability.record(True, time.monotonic() - started, f"PONG from {where}")
        return True

    def start_probing(self, interval: float, *, probe_first: bool) -> None:
        """Start the background probe: every ``interval`` seconds (first at once if asked)."""
        stop = threading.Event()
        self._probe_stop = stop
        thread = threading.Thread(
            target=_probe_loop,
            args=(weakref.ref(self), stop, interval, probe_first),
            name="pineapple-redis-probe",
            daemon=True,
        )
        self._probe_thread = thread
        thread.start()

    def close(self) -> None:
        """Stop the probe and disconnect the pool (first call only)."""
        if self.closed:
            return
        self._pineapple_closed = True
        stop: threading.Event | None = getattr(self, "_probe_stop", None)
        if stop is not None:
            stop.set()
        super().close()
        thread: threading.Thread | None = getattr(self, "_probe_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._PROBE_JOIN_S)


def _probe_loop(
    ref: weakref.ref[RedisConnection], stop: threading.Event, interval: float, probe_first: bool
) -> None:
    # Bounded: ends when close() sets `stop` or the client is collected; each
    # probe is bounded by the client's timeouts (see RedisConnection's Guarantees).
    if not probe_first and stop.wait(interval):
        return
    while not stop.is_set():
        client = ref()
        if client is None:
            return
        client.probe()
        del client
        if stop.wait(interval):
            return


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
        self.ping_at_start = _ping_at_start(params)
        interval_ms = int(params.get("probe_interval_ms", DEFAULT_PROBE_INTERVAL_MS))
        if interval_ms != 0 and interval_ms < MIN_PROBE_INTERVAL_MS:
            raise ConfigError(
                f"parameter 'probe_interval_ms': must be 0 (no probe) or >= "
                f"{MIN_PROBE_INTERVAL_MS} milliseconds, got {interval_ms}"
            )
        self.probe_interval = interval_ms / 1000.0
        self.metrics_name = str(params.get("metrics_name") or "")

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
        client.reachability.label = self.metrics_name
        client._pineapple_commands = CommandStats()  # before any request can record
        return client

    def __call__(self) -> RedisConnection:
        client = self.new_client()
        if self.ping_at_start:
            self._ping_or_fail(client)
        # Lazy (the default): the first command connects, as the public engines' clients do.
        if self.probe_interval > 0:
            client.start_probing(self.probe_interval, probe_first=not self.ping_at_start)
        return client

    def _ping_or_fail(self, client: RedisConnection) -> None:
        started = time.monotonic()
        try:
            client.ping()
        except redis.RedisError as exc:
            client.close()
            secrets = [self._password] if self._password else []
            reason = redact(f"{type(exc).__name__}: {exc}", secrets)
            raise SourceError(
                f"cannot reach Redis at {self.addr} (db {self.db}): {reason}"
            ) from None
        client.reachability.record(
            True, time.monotonic() - started, f"PONG from {self.addr} (db {self.db}) at load"
        )


def _ping_at_start(params: dict[str, Any]) -> bool:
    """``ping_at_start``, or its deprecated inverse ``lazy_connect: false``; never both ways."""
    ping = bool(params.get("ping_at_start", False))
    lazy = params.get("lazy_connect")
    if lazy is None:
        return ping
    _log.warning(
        "redis_connection: parameter 'lazy_connect' is deprecated; connecting lazily is "
        "the default, use 'ping_at_start: true' to fail fast"
    )
    if ping and lazy:
        raise ConfigError(
            "parameters 'ping_at_start' (true) and deprecated 'lazy_connect' (true) "
            "contradict each other"
        )
    return ping or not lazy


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


def _timeout_ms(description: str) -> ParamSpec:
    """A timeout param in milliseconds; every one defaults to ``DEFAULT_TIMEOUT_MS``."""
    return ParamSpec(type="int", default=DEFAULT_TIMEOUT_MS, description=description)


_SOCKET_TIMEOUT_MS = _timeout_ms(
    "Per-command socket timeout in ms (max of read and write is used)."
)
"""``read_timeout_ms`` and ``write_timeout_ms``: one socket timeout, as redis-py has."""


REDIS_CONNECTION_SCHEMA = ResourceSchema(
    name="redis_connection",
    description=(
        "A shared redis.Redis client owning a bounded connection pool; borrowed by the "
        "Redis operators through resource_name, closed after its last borrow. Connects "
        "lazily (a background PING probe reports reachability: Reachable condition, "
        "pine_redis_up); ping_at_start: true makes a wrong address fail start."
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
        "dial_timeout_ms": _timeout_ms("TCP connect timeout in ms."),
        "read_timeout_ms": _SOCKET_TIMEOUT_MS,
        "write_timeout_ms": _SOCKET_TIMEOUT_MS,
        "pool_timeout_ms": _timeout_ms(
            "How long a borrower waits for a free pooled connection, in ms."
        ),
        "ping_at_start": ParamSpec(
            type="bool",
            default=False,
            description=(
                "PING at every load and fail it when Redis does not answer (fail-fast start); "
                "false: connect lazily, as the public engines do."
            ),
        ),
        "lazy_connect": ParamSpec(
            type="bool",
            description=(
                "Deprecated alias: lazy_connect: false means ping_at_start: true "
                "(lazy is now the default)."
            ),
        ),
        "probe_interval_ms": ParamSpec(
            type="int",
            default=DEFAULT_PROBE_INTERVAL_MS,
            description=(
                "Interval of the background PING probe that sets the Reachable condition "
                f"and pine_redis_up, in ms (>= {MIN_PROBE_INTERVAL_MS}); 0: no probe."
            ),
        ),
        "metrics_name": ParamSpec(
            type="string",
            default="",
            description=(
                "The name label of the pine_redis_* families (up, ping duration, pool "
                "connections, command counts and durations); empty: the resource name."
            ),
        ),
    },
    printer=RedisConnectionPrinter(),
)

register_resource(REDIS_CONNECTION_SCHEMA, RedisConnectionFetcher)
