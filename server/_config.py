"""``Config``: what a user sets for a server; ``Wiring``: what code plugs into it.

``Config`` holds the settings a user chooses (each CLI flag has its field,
plus ``resources`` and ``plugins`` for code that embeds the server).
``Wiring`` (``Config.wiring``) holds the injection points of whoever
assembles a server: the resource registry, the engine factory and the
responder (so that the server can be built and tested before, or without, a
particular engine: by default ``pineapple.engine.Engine`` and the engine's
``/execute`` responder), the environment ``${VAR}`` reads, and, for a worker
of ``--workers N``, where its config bytes and metrics come from. No flag
sets a ``Wiring`` field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pineapple import Context, resource
from pineapple._config_file import DEFAULT_MAX_CONFIG_BYTES
from pineapple.resource.lowlevel import close_now

from ._admin import clean_admin_token
from ._config_read import read_config_file
from ._registries import resource_registry
from ._secret_files import SecretFiles
from ._tracing import TracingSettings
from .metrics._pod_metrics import PodMetrics

if TYPE_CHECKING:  # a type only: the sample's module reads this one's Responder
    from ._request_sample import RequestSample

__all__ = [
    "ADMIN_TOKEN_ENV",
    "Config",
    "ConfigSource",
    "EngineFactory",
    "EngineLike",
    "FleetSettings",
    "HandResource",
    "ResourcesHook",
    "Responder",
    "Wiring",
    "parse_addr",
]

ADMIN_TOKEN_ENV = "PINEAPPLE_ADMIN_TOKEN"


class EngineLike(Protocol):
    """What the server needs of an engine (``pineapple.engine.Engine`` is one)."""

    @property
    def blocking(self) -> bool:
        """True when some operator does blocking I/O: run ``execute`` off the event loop."""
        ...

    def execute(self, ctx: Context, request: dict[str, Any]) -> dict[str, Any]:
        """Run the main pipeline group on ``request``."""
        ...

    def close(self) -> None:
        """Release what the operators hold. Called once, when the snapshot retires."""
        ...


class ConfigSource(Protocol):
    """Where a server reads its config bytes when not from the file (``Config.config_source``).

    A source may also have ``describe() -> dict`` (what ``GET /config`` shows of it under
    ``config_source``; its ``stale`` entry, when set, is also in ``/readyz``'s
    ``config_stale``): see :func:`source_view`.
    """

    def read(self, max_bytes: int) -> bytes:
        """The config's bytes (at most ``max_bytes``); a ``BuildError`` at step ``read``."""
        ...


def source_view(source: ConfigSource | None) -> dict[str, Any] | None:
    """What ``source`` says of itself (its ``describe()``), or None (a file, or a source
    that does not describe itself)."""
    describe = getattr(source, "describe", None)
    if describe is None:
        return None
    view: dict[str, Any] = describe()
    return view


EngineFactory = Callable[[bytes], EngineLike]
"""Builds an engine from the config file's bytes; raises a ``PineappleError`` when invalid."""

Responder = Callable[..., tuple[int, bytes]]
"""``/execute`` semantics: ``(engine, context, request body[, group])`` -> (status, JSON bytes).

``group`` is passed only when the request names a pipeline group
(``POST /execute/{group}``); the default responder answers 404 for an
unknown one.
"""


@dataclass(frozen=True)
class HandResource:
    """A resource registered by code, not by the config file (kept across reloads).

    Each new snapshot's Manager registers it again with the same fetcher
    object; its current value is carried over from the serving manager (not
    fetched again), and a retired manager never closes the shared fetcher:
    the service closes it once, at shutdown.
    """

    name: str
    fetcher: resource.Fetcher
    interval: float | timedelta = 0
    type_name: str = "hand"
    printer: resource.Printer | None = None
    secrets: tuple[str, ...] = ()

    def register(
        self, manager: resource.Manager, carry_over: resource.Manager | None = None
    ) -> None:
        """Register this resource on ``manager``, sharing ``carry_over``'s value."""
        manager.register(
            self.name,
            self.fetcher,
            self.interval,
            type_name=self.type_name,
            printer=self.printer,
            secrets=self.secrets,
            owns_fetcher=False,
            carry_over=carry_over,
        )


ResourcesHook = Callable[[resource.Manager], None] | Sequence[HandResource]
"""``Config.resources``: a callable registering resources, or a list of ``HandResource``."""


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` (``":port"`` means all interfaces; IPv6 as ``[::1]:port``)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {addr!r} is not host:port")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


@dataclass(frozen=True)
class Wiring:
    """The injection points of a server, for the code that assembles one (no user
    setting): ``Config(..., wiring=Wiring(registry=...))``.

    Every field None: the built-in resource types, ``pineapple.engine.Engine``,
    the engine's ``/execute`` responder, ``os.environ``, the config file, and
    this process's metrics alone.
    """

    registry: resource.Registry | None = None
    """The resource types builds look up (None: the built-in ones; ``Config.resource_types``)."""
    engine_factory: EngineFactory | None = None
    """Builds each snapshot's engine from the config's bytes (None: the Pine engine)."""
    responder: Responder | None = None
    """``/execute`` semantics (None: the engine's responder with ``Config.max_items``)."""
    env: Mapping[str, str] | None = None
    """The environment ``${VAR}`` in the config reads (None: ``os.environ``)."""
    config_source: ConfigSource | None = None
    """Read the config from here instead of ``config_path`` (a worker of ``--workers N``
    builds from the bytes its supervisor accepted, never from the file)."""
    pod_metrics: PodMetrics | None = None
    """Where this process's metrics join every other process's (a worker of ``--workers
    N``); None: ``/metrics`` and ``/stats`` show this process alone."""
    request_sample: RequestSample | None = None
    """Where ``/execute`` records the requests a reload replays (a worker of ``--workers
    N`` serves it to its supervisor, and replays nothing itself); None: the process's own,
    which its reloads replay (``server/_replay.py``)."""

    def read_config(self, path: Path, max_bytes: int) -> bytes:
        """The config's bytes: from ``config_source`` when set, else the file at ``path``."""
        if self.config_source is not None:
            return self.config_source.read(max_bytes)
        return read_config_file(path, max_bytes)


DEFAULT_STORE_TIMEOUT = 2.0
"""Seconds each fleet store operation may take (``--fleet-timeout`` of ``serve``, ``publish``
and ``fleet``; an upload or download: ``--fleet-download-timeout``). A pod whose store does
not answer starts from its cache after one of them."""


@dataclass(frozen=True)
class FleetSettings:
    """A pod in a fleet (``serve --fleet URL --fleet-cache DIR``; ``docs/fleet.md``).

    Every resource whose type the fleet moves is read from the fleet store,
    never from its source; ``follow_config``: the pod has no config file and
    serves the fleet's config, following its revisions.
    """

    url: str
    """``--fleet``: the store (``nats://host:port[,...]``, ``file:///dir``)."""
    cache_dir: str
    """``--fleet-cache``: the generations and the config the pod last accepted."""
    follow_config: bool = False
    """No CONFIG was given: serve the fleet's config (``CONFIG["current"]``)."""
    pod_id: str | None = None
    """``--fleet-pod-id``: the pod's key in the heartbeats (None: ``<hostname>-<pid>``)."""
    timeout: float = DEFAULT_STORE_TIMEOUT
    """``--fleet-timeout``: every store operation's deadline, in seconds (a pod whose store
    is down starts from its cache after one of them); the one default of every command."""
    poll_seconds: float = 30.0
    """``--fleet-poll-seconds``: the backstop beside the watch."""
    heartbeat_seconds: float = 5.0
    """``--fleet-heartbeat-seconds``: how often the pod writes what it serves."""
    max_snapshot_bytes: int = 4 * 1024**3
    """``--fleet-max-snapshot-bytes``: a larger snapshot is refused, not downloaded (the
    default of ``FleetLimits`` too)."""
    download_timeout: float = 300.0
    """``--fleet-download-timeout``: seconds one download may take (``FleetLimits``' too)."""
    keep_generations: int = 3
    """``--fleet-keep-generations``: generations per resource the cache keeps
    (``FleetLimits``' too)."""

    @property
    def config_path(self) -> Path:
        """The path a pod without a config file names its config by: the fleet config kept
        in its cache (its relative paths resolve against the cache directory)."""
        return Path(self.cache_dir) / "config"


@dataclass(frozen=True)
class Config:
    """Settings of one server (and of each of its worker processes).

    >>> Config(config_path="configs/demo.json", addr="127.0.0.1:8080").workers
    1
    """

    config_path: str | Path
    addr: str = "127.0.0.1:8080"
    resources: ResourcesHook | None = None
    plugins: Sequence[str] = ()
    workers: int = 1
    shared_dir: str | None = None
    """With ``workers > 1``: where the supervisor creates its snapshot directory (default
    ``/dev/shm``, else the temporary directory); ``--shared-dir``."""
    max_body_bytes: int = 8 * 1024 * 1024
    execute_threads: int = 32
    pin_cpus: bool = False
    """Run each serving process on one CPU of those it may use, worker ``i`` on the
    ``i``-th (``--pin-cpus``; see ``server/_cpu_pin.py`` for when it is right)."""
    request_timeout_ms: int = 1000
    """Per-request deadline of ``/execute`` (504 past it); 0 disables it."""
    max_items: int = 100_000
    """Items one ``/execute`` request may carry (413 above); 0 disables the limit."""
    max_answer_bytes: int = 64 * 1024 * 1024
    """About the most bytes of one ``/execute`` answer: operators' copies are counted
    before they are made, the encoded answer measured; 507 past it
    (``--max-answer-bytes``; 0: no bound)."""
    inline_body_bytes: int = 64 * 1024
    """Bodies larger than this run on the worker threads even when the engine never blocks."""
    read_header_timeout_ms: int = 10_000
    """From a request's first byte (a new connection: its accept) until its headers are
    complete; past it the connection is closed, with 408 if nothing is being answered
    (``--read-header-timeout-ms``; 0: none)."""
    read_timeout_ms: int = 30_000
    """From the same start until the request's body is complete; past it the same close
    (``--read-timeout-ms``; 0: none)."""
    idle_timeout_ms: int = 5_000
    """How long a keep-alive connection may wait for its next request (``--idle-timeout-ms``;
    uvicorn's ``timeout_keep_alive``; 0: closed after each response)."""
    max_inflight_body_bytes: int = 512 * 1024 * 1024
    """Request body bytes ``/execute`` may hold at once over all its requests (from the first
    byte read until the answer is sent); a body that would pass it is answered 503 at once
    (``--max-inflight-body-bytes``; 0: no cap). With the defaults, 1,024 connections times an
    8 MiB body would otherwise be 8 GiB."""
    max_connections: int = 1024
    """Connections served at once by each process; a request on one more is answered 503
    and its connection closed (``--max-connections``; uvicorn's ``limit_concurrency``; 0: no
    cap)."""
    write_timeout_ms: int = 30_000
    """From a request's headers complete until its response is written; a client that does
    not read it by then has its connection aborted (``--write-timeout-ms``, Go's
    ``WriteTimeout``; 0: none)."""
    shutdown_delay_seconds: float = 5.0
    """After SIGTERM, how long ``/readyz`` answers 503 while the listener still accepts (so
    load balancers can drop the pod first); the drain follows (``--shutdown-delay-seconds``;
    0: stop accepting at once)."""
    watch: bool = True
    debounce_seconds: float = 0.2
    poll_seconds: float = 10.0
    start_timeout: float = 60.0
    build_timeout_seconds: float = 60.0
    """``--workers N``: how long a config's build (engine and resources) may take in a
    worker; a reload whose trial build takes longer is refused, and a worker's follow pass
    may take twice as long before it counts as stuck (``--build-timeout-seconds``)."""
    replay_sample_requests: int = 64
    """How many recent answered ``/execute`` requests each process keeps for a reload's
    warm-up replay (``--replay-sample-requests``; 0: none kept)."""
    replay_sample_bytes: int = 1 << 20
    """The body bytes that sample may hold in each process (``--replay-sample-bytes``)."""
    replay_sample_seconds: float = 600.0
    """The oldest sampled request a replay reads (``--replay-sample-seconds``)."""
    replay_seconds: float = 5.0
    """How long a candidate config's warm-up replay may run before it stops
    (``--replay-seconds``; 0: no replay)."""
    shadow_share: float = 0.1
    """The share of live ``/execute`` requests a staged candidate also answers, off the
    response path, unless the stage names its own (``--shadow-share``, 0 to 1)."""
    shadow_queue: int = 64
    """The most shadowed requests waiting for the candidate in each process; more are dropped
    and counted (``--shadow-queue``)."""
    shadow_examples: int = 20
    """The most differing requests a stage's summary keeps as examples (``--shadow-examples``)."""
    shadow_max_seconds: float = 3600.0
    """How long a candidate stays staged before it is aborted (``--shadow-max-seconds``)."""
    drain_seconds: float = 30.0
    admin_token: str | None = None
    log_level: str = "info"
    log_format: str = "text"
    """``text`` or ``json`` (one object a line), for the supervisor and every worker
    (``--log-format``; see ``server/_log_format.py``)."""
    access_log: bool = False
    """Log one line per HTTP request: method, path (no query), status, duration
    (``--access-log``; logger ``pineapple.access`` at INFO)."""
    max_config_bytes: int = DEFAULT_MAX_CONFIG_BYTES
    """A config file bigger than this is refused at step ``read`` (``--max-config-bytes``)."""
    resource_memory_budget_bytes: int = 0
    """Most bytes resource values may hold, counting current, kept previous and
    retired-but-borrowed values; a refresh past it is refused, the old value kept
    (``--resource-memory-budget-bytes``; 0: no budget)."""
    trust_proxy: Sequence[str] = ()
    """CIDRs of proxies whose ``X-Forwarded-For`` names the client (``--trust-proxy``).

    Empty (the default): admin decisions use the socket peer only."""
    state_dir: str | None = None
    """Where the config history, a rollback's pin and resource pins are kept across restarts
    (``--state-dir``; the command's default is per config path; None: no history)."""
    history_max_count: int = 20
    """Accepted configs the history keeps (``--history-max-count``)."""
    history_max_bytes: int = 256 * 1024 * 1024
    """Bytes of accepted configs the history keeps (``--history-max-bytes``)."""
    history_max_value_bytes: int = 64 * 1024 * 1024
    """Bytes of one pinned or rolled-back resource's value kept in the state directory
    across restarts (``--history-max-value-bytes``; ``server/_kept_values.py``)."""
    revision_header: bool = False
    """Answer ``/execute`` with ``x-pineapple-config-revision`` (``--revision-header``)."""
    secrets_dir: str | None = None
    """``--secrets-dir``: ``${VAR}`` and ``PINEAPPLE_ADMIN_TOKEN`` read the environment,
    then the file ``VAR`` in this folder (a Secret mounted as a volume; see
    ``server/_secret_files.py``). None: the environment only."""
    tracing: TracingSettings | None = None
    """OpenTelemetry spans of ``/execute`` sent by OTLP (``--tracing``, ``--otel-endpoint``;
    ``server/_tracing.py``); None (the default): no tracing, nothing of it imported."""
    fleet: FleetSettings | None = None
    """A pod in a fleet (``--fleet``): shared resources and, without a config file, the
    config itself come from the fleet store (None: a pod of its own)."""
    bench_stubs: bool = False
    """Build on the benchmark registries: the public engines' ``pine_bench`` stub
    operators and resource types over the built-ins (``--bench-stubs``; benchmarks only)."""
    wiring: Wiring = field(default_factory=lambda: Wiring())
    """What the code that assembles this server plugs in (see :class:`Wiring`)."""

    def resource_types(self) -> resource.Registry:
        """The resource types builds look up: ``wiring.registry``, else the built-in
        ones (with the benchmark stubs over them under ``bench_stubs``)."""
        return self.wiring.registry or resource_registry(self.bench_stubs)

    @property
    def path(self) -> Path:
        """The config file's path as given (not resolved: it may be a symlink)."""
        return Path(self.config_path)

    def environ(self) -> Mapping[str, str] | None:
        """What ``${VAR}`` reads: ``Wiring.env``, else the environment and ``secrets_dir``
        (None: the process's environment)."""
        if self.wiring.env is not None:
            return self.wiring.env
        return None if self.secrets_dir is None else SecretFiles(self.secrets_dir)

    def resolved_admin_token(self) -> str | None:
        """``admin_token`` or, when unset, env ``PINEAPPLE_ADMIN_TOKEN`` (empty: none),
        without surrounding whitespace; ``AdminTokenError`` for one that cannot be sent
        (see ``server/_admin.py``)."""
        if self.admin_token is not None:
            return clean_admin_token(self.admin_token, "the admin token")
        environ = self.environ() or os.environ
        return clean_admin_token(environ.get(ADMIN_TOKEN_ENV), ADMIN_TOKEN_ENV)

    def register_hand_resources(
        self, manager: resource.Manager, carry_over: resource.Manager | None = None
    ) -> None:
        """Register ``resources`` (callable or ``HandResource`` list) on ``manager``.

        ``HandResource`` values are shared with ``carry_over`` (the serving
        manager); a callable hook registers what it likes, as it likes.
        """
        hook = self.resources
        if hook is None:
            return
        if callable(hook):
            hook(manager)
            return
        for spec in hook:
            spec.register(manager, carry_over)

    def close_hand_fetchers(self) -> None:
        """Close the fetchers of ``HandResource`` entries (once, at shutdown)."""
        hook = self.resources
        if hook is None or callable(hook):
            return
        for spec in hook:
            close_now(f"fetcher of {spec.type_name}/{spec.name}", spec.fetcher)
