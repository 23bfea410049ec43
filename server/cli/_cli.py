"""The ``serve`` and ``check`` subcommands of the ``pineapple`` CLI.

``pineapple/cli.py`` registers them with :func:`add_serve_command` and
:func:`add_check_command`; each sets ``func`` on its parser to a function
``(args) -> exit code``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from pineapple.commands import Subparsers, add_subcommand

from .._admin import parse_trusted_proxies
from .._build_error import BuildError, CheckError
from .._config import Config, FleetSettings
from .._config_history import (
    DEFAULT_HISTORY_MAX_BYTES,
    DEFAULT_HISTORY_MAX_COUNT,
    default_state_dir,
)
from .._kept_values import DEFAULT_KEPT_VALUE_MAX_BYTES
from .._log_format import add_log_flags, configure_logging
from .._run import check, run
from .._secret_files import add_secrets_dir_flag
from .._tracing import TracingSettings, require_sdk
from .._watcher import add_watch_flags
from ..fleet._flags import POD_LIMITS, add_store_flags
from ..http._serving import exit_within
from ._cpu_quota import CpuCount, usable_cpus
from ._go_flags import SERVER_FLAGS, add_go_spelling_hints

__all__ = ["add_check_command", "add_serve_arguments", "add_serve_command", "serve_command"]

_log = logging.getLogger("pineapple.server")


def add_serve_command(subparsers: Subparsers) -> None:
    """``pineapple serve CONFIG [--addr HOST:PORT] [--plugin MODULE]... [--workers N]``."""
    parser = add_subcommand(
        subparsers, "serve", serve_command, config=True, config_optional=True, plugins=True
    )
    add_serve_arguments(parser)
    add_go_spelling_hints(parser, "pineapple-server", SERVER_FLAGS)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of ``serve`` but CONFIG, ``--plugin`` and ``--max-config-bytes``: the
    flags ``pineapple serve`` and ``pineapple-server`` share (``serve_command`` reads them)."""
    parser.set_defaults(prog="pineapple serve")
    parser.add_argument("--addr", default="127.0.0.1:8080", help="HOST:PORT to listen on")
    add_secrets_dir_flag(parser)
    parser.add_argument(
        "--workers",
        type=_workers,
        action=_WorkersAction,
        default=1,
        help="worker processes (auto: one per CPU this process may use, capped by its "
        "cgroup CPU quota); with 2 or more, a supervisor loads the "
        "data resources once and every worker maps the same shared snapshots",
    )
    parser.set_defaults(workers_auto=None)
    parser.add_argument(
        "--shared-dir",
        default=None,
        metavar="DIR",
        help="where shared snapshots live with --workers (default /dev/shm)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=8 * 1024 * 1024,
        help="refuse /execute bodies larger than this with 413",
    )
    parser.add_argument(
        "--request-timeout-ms",
        type=int,
        default=1000,
        help="deadline of each /execute request in ms, 504 past it (0: none)",
    )
    parser.add_argument(
        "--max-items",
        type=int,
        default=100_000,
        help="most items one /execute request may carry, 413 above (0: none)",
    )
    _add_bound(
        parser,
        "--max-answer-bytes",
        Config.max_answer_bytes,
        "most bytes of one /execute answer, 507 past it: operators' copies are counted "
        "before they are made (0: none)",
        metavar="BYTES",
    )
    parser.add_argument(
        "--inline-body-bytes",
        type=int,
        default=64 * 1024,
        help="run /execute bodies above this size off the event loop",
    )
    _add_bound(
        parser,
        "--read-header-timeout-ms",
        Config.read_header_timeout_ms,
        "close a connection whose request headers are not complete this long after the "
        "request's first byte (a new connection: after its accept), with 408 (0: none)",
    )
    _add_bound(
        parser,
        "--read-timeout-ms",
        Config.read_timeout_ms,
        "the same for the whole request, body included (0: none)",
    )
    _add_bound(
        parser,
        "--idle-timeout-ms",
        Config.idle_timeout_ms,
        "close a keep-alive connection idle this long between requests "
        "(0: close after each response)",
    )
    _add_bound(
        parser,
        "--max-inflight-body-bytes",
        Config.max_inflight_body_bytes,
        "request body bytes /execute holds at once over all requests; a body that "
        "would pass it is answered 503 (0: no cap)",
        metavar="N",
    )
    _add_bound(
        parser,
        "--max-connections",
        Config.max_connections,
        "connections served at once by each process; a request on one more is "
        "answered 503 (0: no cap)",
        metavar="N",
    )
    _add_bound(
        parser,
        "--write-timeout-ms",
        Config.write_timeout_ms,
        "abort a connection whose response is not written this long after its request's "
        "headers because the client does not read it (0: none)",
    )
    add_watch_flags(parser)
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=Config.drain_seconds,
        help="once the listener has closed, how long in-flight requests may finish before "
        "the process exits (it exits at most 2 s after that)",
    )
    parser.add_argument(
        "--shutdown-delay-seconds",
        type=float,
        default=Config.shutdown_delay_seconds,
        metavar="S",
        help="on SIGTERM, answer /readyz 503 and keep accepting this long before the drain, "
        "so load balancers stop sending first (SIGINT: no delay; 0: none)",
    )
    parser.add_argument(
        "--build-timeout-seconds",
        type=float,
        default=Config.build_timeout_seconds,
        metavar="S",
        help="--workers N: a reload whose trial build (engine and resources, as a worker "
        "builds it) takes longer is refused; a worker's build may take twice this long",
    )
    parser.add_argument(
        "--replay-sample-requests",
        type=int,
        default=Config.replay_sample_requests,
        metavar="N",
        help="recent answered /execute requests each process keeps for a reload's warm-up "
        "replay (in memory only; 0: none)",
    )
    parser.add_argument(
        "--replay-sample-bytes",
        type=int,
        default=Config.replay_sample_bytes,
        metavar="BYTES",
        help="the request body bytes that sample may hold per process",
    )
    parser.add_argument(
        "--replay-sample-seconds",
        type=float,
        default=Config.replay_sample_seconds,
        metavar="S",
        help="the oldest sampled request a replay reads",
    )
    parser.add_argument(
        "--replay-seconds",
        type=float,
        default=Config.replay_seconds,
        metavar="S",
        help="how long a candidate config may take answering the sample and its "
        "warmup_requests before a reload (the rest is skipped; 0: no replay)",
    )
    parser.add_argument(
        "--shadow-share",
        type=float,
        default=Config.shadow_share,
        metavar="RATIO",
        help="the share (0 to 1) of live /execute requests a staged candidate also answers, "
        "off the response path (a stage's ?share= overrides it)",
    )
    parser.add_argument(
        "--shadow-queue",
        type=int,
        default=Config.shadow_queue,
        metavar="N",
        help="shadowed requests waiting for the candidate per process; more are dropped",
    )
    parser.add_argument(
        "--shadow-examples",
        type=int,
        default=Config.shadow_examples,
        metavar="N",
        help="differing requests a stage's summary keeps as examples",
    )
    parser.add_argument(
        "--shadow-max-seconds",
        type=float,
        default=Config.shadow_max_seconds,
        metavar="S",
        help="how long a candidate stays staged before it is aborted",
    )
    add_log_flags(
        parser,
        level_help="log level of every process (the access log writes at info)",
        format_help="text lines, or one JSON object a line (time, level, logger, message, pid "
        "and the fields of the event), for the supervisor and every worker",
    )
    parser.add_argument(
        "--pin-cpus",
        action="store_true",
        help="run each serving process on one CPU of those it may use (worker i on the "
        "i-th): fewer context switches where the CPUs are the pod's own (a Kubernetes "
        "Guaranteed pod under the static CPU manager policy, a dedicated machine)",
    )
    parser.add_argument(
        "--bench-stubs",
        action="store_true",
        help="benchmarks only: build on the public engines' stub operators and resource "
        "types (pine_bench) over the built-ins",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="log one line per HTTP request: peer, method, path without its query, "
        "status and duration",
    )
    parser.add_argument(
        "--revision-header",
        action="store_true",
        help="answer every /execute with x-pineapple-config-revision: the revision of the "
        "config that produced it",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where the config history, a rollback's pin and resource pins are kept across "
        "restarts (default $XDG_STATE_HOME/pineapple/<hash of the config path>; '' : off)",
    )
    parser.add_argument(
        "--history-max-count",
        type=int,
        default=DEFAULT_HISTORY_MAX_COUNT,
        help="accepted configs the history keeps (the oldest go first)",
    )
    parser.add_argument(
        "--history-max-bytes",
        type=int,
        default=DEFAULT_HISTORY_MAX_BYTES,
        help="bytes of accepted configs the history keeps (a larger config is listed, not kept)",
    )
    parser.add_argument(
        "--history-max-value-bytes",
        type=int,
        default=DEFAULT_KEPT_VALUE_MAX_BYTES,
        metavar="N",
        help="bytes of a pinned or rolled-back resource's value kept in the state directory "
        "(its type's snapshot files); a larger value keeps its pin, and a restart re-reads it",
    )
    parser.add_argument(
        "--resource-memory-budget-bytes",
        type=int,
        default=0,
        metavar="N",
        help="refuse a resource refresh that would bring the bytes held by resource values "
        "(current, kept previous, still borrowed) over N; the old value keeps serving (0: none)",
    )
    parser.add_argument(
        "--trust-proxy",
        action="append",
        default=[],
        metavar="CIDR[,CIDR...]",
        help="read X-Forwarded-For only from peers in these networks; repeatable "
        "(default: never, admin routes judge the socket peer)",
    )
    _add_fleet_flags(parser)
    _add_tracing_flags(parser)


def _add_tracing_flags(parser: argparse.ArgumentParser) -> None:
    """``--tracing``, ``--otel-endpoint URL``, ``--trace-sample-ratio R`` (``_tracing.py``)."""
    tracing = parser.add_argument_group("tracing (OpenTelemetry; needs pineapple-py[otel])")
    tracing.add_argument(
        "--tracing",
        action="store_true",
        help="send a span per /execute request, operator and resource borrow by OTLP/HTTP "
        "to --otel-endpoint, else to OTEL_EXPORTER_OTLP_ENDPOINT (off by default)",
    )
    tracing.add_argument(
        "--otel-endpoint",
        metavar="URL",
        help="the OTLP/HTTP collector's base URL (/v1/traces is appended); implies --tracing",
    )
    tracing.add_argument(
        "--trace-sample-ratio",
        type=float,
        default=1.0,
        metavar="R",
        help="share of traces started here that are recorded, 0 to 1 (a caller's "
        "traceparent decides for its own; default 1)",
    )


def _tracing_settings(args: argparse.Namespace) -> TracingSettings | None:
    """The tracing flags; None when off; ``ValueError`` naming a bad one or a missing SDK."""
    if not (args.tracing or args.otel_endpoint):
        return None
    settings = TracingSettings(endpoint=args.otel_endpoint, sample_ratio=args.trace_sample_ratio)
    require_sdk()
    return settings


def _add_fleet_flags(parser: argparse.ArgumentParser) -> None:
    """``--fleet URL --fleet-cache DIR`` and the pod's fleet bounds (``docs/fleet.md``)."""
    fleet = parser.add_argument_group("fleet (a pod that follows a fleet store)")
    # --fleet, --fleet-timeout and the pod's limits: one definition with publish and fleet
    add_store_flags(fleet, required=False, limits=POD_LIMITS)
    fleet.add_argument(
        "--fleet-cache",
        default=None,
        metavar="DIR",
        help="where the pod keeps the generations and the config it accepted (required with "
        "--fleet); a pod whose store is down starts from it",
    )
    fleet.add_argument(
        "--fleet-pod-id",
        default=None,
        metavar="ID",
        help="this pod's name in the fleet's heartbeats (default: HOSTNAME-PID)",
    )
    for field, kind, metavar, help in _FLEET_POD:
        fleet.add_argument(
            f"--fleet-{field.replace('_', '-')}",
            type=kind,
            default=getattr(FleetSettings, field),
            metavar=metavar,
            help=help,
        )


_FLEET_POD: tuple[tuple[str, type, str, str], ...] = (
    ("poll_seconds", float, "S", "besides the watch, probe the store this often"),
    ("heartbeat_seconds", float, "S", "write what this pod serves to the store this often"),
)
"""``FleetSettings`` fields of a pod alone, set by a ``--fleet-*`` flag each: (field, type,
metavar, help)."""
_FLEET_POSITIVE = ("timeout", *POD_LIMITS, *(field for field, *_ in _FLEET_POD))
"""The ``--fleet-*`` flags of ``serve`` that must be > 0."""


def _fleet_settings(args: argparse.Namespace) -> FleetSettings | None:
    """The ``--fleet*`` flags; None without ``--fleet``; ``ValueError`` naming a bad one."""
    if args.fleet is None:
        if args.config is None:
            raise ValueError("CONFIG is required (or --fleet URL to serve the fleet's config)")
        return None
    if not args.fleet_cache:
        raise ValueError("--fleet needs --fleet-cache DIR (what the pod starts from)")
    for field in _FLEET_POSITIVE:
        if not getattr(args, f"fleet_{field}") > 0:
            raise ValueError(f"--fleet-{field.replace('_', '-')} must be > 0")
    return FleetSettings(
        url=args.fleet,
        cache_dir=args.fleet_cache,
        follow_config=args.config is None,
        pod_id=args.fleet_pod_id,
        timeout=args.fleet_timeout,
        poll_seconds=args.fleet_poll_seconds,
        heartbeat_seconds=args.fleet_heartbeat_seconds,
        max_snapshot_bytes=args.fleet_max_snapshot_bytes,
        download_timeout=args.fleet_download_timeout,
        keep_generations=args.fleet_keep_generations,
    )


def _add_bound(
    parser: argparse.ArgumentParser, flag: str, default: int, help: str, metavar: str = "MS"
) -> None:
    """A connection bound: an integer flag, ``>= 0`` (checked by :func:`serve_command`)."""
    parser.add_argument(flag, type=int, default=default, metavar=metavar, help=help)


def _workers(text: str) -> int | CpuCount:
    """``--workers``: a count, or ``auto`` for the CPUs this process may use (``_cpu_quota``)."""
    if text == "auto":
        return usable_cpus()
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count or 'auto': {text!r}") from None


class _WorkersAction(argparse.Action):
    """``--workers``: the count in ``workers``; for ``auto``, why, in ``workers_auto``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, CpuCount):
            namespace.workers_auto = values
            values = values.cpus
        namespace.workers = values


def serve_command(args: argparse.Namespace) -> int:
    """Serve a unified config over HTTP, reloading it when it changes.

    Serve CONFIG over HTTP (POST /execute); reload on change, SIGHUP or
    POST /admin/reload; SIGTERM drains and exits 0. With --fleet URL, every
    shared resource comes from the fleet store (never from its source) and,
    without CONFIG, the config too, following its revisions.
    """
    if args.workers_auto is not None:
        configure_logging(args.log_level, args.log_format)
        _log.info("--workers auto: %s", args.workers_auto)
    if args.workers < 1:
        print(f"{args.prog}: --workers must be at least 1", file=sys.stderr)
        return 2
    for flag in (
        "request_timeout_ms",
        "max_items",
        "max_answer_bytes",
        "inline_body_bytes",
        "drain_seconds",
        "shutdown_delay_seconds",
        "write_timeout_ms",
        "resource_memory_budget_bytes",
        "read_header_timeout_ms",
        "read_timeout_ms",
        "idle_timeout_ms",
        "max_connections",
        "max_inflight_body_bytes",
        "history_max_bytes",
        "history_max_value_bytes",
        "replay_sample_requests",
        "replay_sample_bytes",
        "replay_sample_seconds",
        "replay_seconds",
        "shadow_examples",
    ):
        if getattr(args, flag) < 0:
            print(f"{args.prog}: --{flag.replace('_', '-')} must be >= 0", file=sys.stderr)
            return 2
    if args.history_max_count < 1:
        print("pineapple serve: --history-max-count must be at least 1", file=sys.stderr)
        return 2
    if not 0.0 <= args.shadow_share <= 1.0:
        print(f"{args.prog}: --shadow-share must be between 0 and 1", file=sys.stderr)
        return 2
    if args.shadow_queue < 1 or not args.shadow_max_seconds > 0:
        print(
            f"{args.prog}: --shadow-queue must be at least 1 and --shadow-max-seconds > 0",
            file=sys.stderr,
        )
        return 2
    if not args.build_timeout_seconds > 0:
        print(f"{args.prog}: --build-timeout-seconds must be > 0", file=sys.stderr)
        return 2
    try:
        trusted = tuple(c.strip() for arg in args.trust_proxy for c in arg.split(",") if c.strip())
        parse_trusted_proxies(trusted)
        fleet = _fleet_settings(args)
        tracing = _tracing_settings(args)
    except ValueError as exc:
        print(f"{args.prog}: {exc}", file=sys.stderr)
        return 2
    code = run(
        Config(
            config_path=args.config if fleet is None or args.config else fleet.config_path,
            fleet=fleet,
            addr=args.addr,
            plugins=tuple(args.plugin),
            workers=args.workers,
            shared_dir=args.shared_dir,
            max_body_bytes=args.max_body_bytes,
            request_timeout_ms=args.request_timeout_ms,
            max_items=args.max_items,
            max_answer_bytes=args.max_answer_bytes,
            inline_body_bytes=args.inline_body_bytes,
            read_header_timeout_ms=args.read_header_timeout_ms,
            read_timeout_ms=args.read_timeout_ms,
            idle_timeout_ms=args.idle_timeout_ms,
            max_connections=args.max_connections,
            max_inflight_body_bytes=args.max_inflight_body_bytes,
            poll_seconds=args.poll_seconds,
            drain_seconds=args.drain_seconds,
            shutdown_delay_seconds=args.shutdown_delay_seconds,
            build_timeout_seconds=args.build_timeout_seconds,
            replay_sample_requests=args.replay_sample_requests,
            replay_sample_bytes=args.replay_sample_bytes,
            replay_sample_seconds=args.replay_sample_seconds,
            replay_seconds=args.replay_seconds,
            shadow_share=args.shadow_share,
            shadow_queue=args.shadow_queue,
            shadow_examples=args.shadow_examples,
            shadow_max_seconds=args.shadow_max_seconds,
            write_timeout_ms=args.write_timeout_ms,
            watch=not args.no_watch and args.config is not None,
            log_level=args.log_level,
            log_format=args.log_format,
            access_log=args.access_log,
            max_config_bytes=args.max_config_bytes,
            resource_memory_budget_bytes=args.resource_memory_budget_bytes,
            trust_proxy=trusted,
            bench_stubs=args.bench_stubs,
            pin_cpus=args.pin_cpus,
            state_dir=_state_dir(args, fleet),
            history_max_count=args.history_max_count,
            history_max_bytes=args.history_max_bytes,
            history_max_value_bytes=args.history_max_value_bytes,
            revision_header=args.revision_header,
            secrets_dir=args.secrets_dir,
            tracing=tracing,
        )
    )
    exit_within(code)  # the process is about to exit: bound how long that takes
    return code


def _state_dir(args: argparse.Namespace, fleet: FleetSettings | None) -> str | None:
    """``--state-dir``: as given, None for ``''`` and under ``--fleet`` (the fleet keeps
    its own history), else the default for the config's path."""
    if fleet is not None or args.state_dir == "":
        return None
    if args.state_dir is not None:
        return str(args.state_dir)
    return str(default_state_dir(Path(args.config)))


def add_check_command(subparsers: Subparsers) -> None:
    """``pineapple check CONFIG [--fetch] [--plugin MODULE]...``."""
    parser = add_subcommand(subparsers, "check", check_command, config=True, plugins=True)
    parser.add_argument("--fetch", action="store_true", help="also fetch every resource once")
    add_secrets_dir_flag(parser)


def check_command(args: argparse.Namespace) -> int:
    """Validate a unified config like nginx -t.

    Build the engine, register every resource (fetch them only with --fetch)
    and validate operator -> resource dependencies. Exit 0 when valid, 1
    otherwise.
    """
    # Fetch failures are reported once, below; the manager's own warnings would repeat them.
    logging.basicConfig(level=logging.ERROR, format="pineapple: %(message)s")
    config = Config(
        config_path=args.config,
        plugins=tuple(args.plugin),
        max_config_bytes=args.max_config_bytes,
        secrets_dir=args.secrets_dir,
    )
    try:
        names = check(config, fetch=args.fetch)
    except BuildError as exc:
        for error in exc.errors if isinstance(exc, CheckError) else [exc]:
            print(f"pineapple: [{error.step}] {error.reason}", file=sys.stderr)
        print(f"pineapple: configuration file {args.config} test failed", file=sys.stderr)
        return 1
    fetched = "fetched" if args.fetch else "declared, not fetched"
    print(f"pineapple: {len(names)} resource(s) {fetched}: {', '.join(names) or '-'}")
    print(f"pineapple: configuration file {args.config} test is successful")
    return 0
