"""``pineapple-server`` and ``pineapple-run``: the Go tools' command lines, served by ours.

A Deployment written for the Go engine's ``cmd/pineapple-server`` (``-config
c.json -addr :8080 -write-timeout 90s``) runs ``pineapple-server`` with the
same arguments: every Go flag, in Go's syntax (:mod:`._go_flags`), with Go's
defaults. Each Go flag is read onto ``serve``'s settings and ``serve_command``
runs them: there is no second server here. Every ``serve`` flag is taken too,
in the same syntax (``-workers 2``, ``-request-timeout-ms 1000``).

Go's defaults, where ours differ: listen on ``:8080`` (every interface), no
``/execute`` deadline, a 10 MiB body limit, 60 s write and 120 s idle
timeouts, 5 s for in-flight requests after SIGTERM. A Go timeout of 0 means
Go's default, as in Go. Go flags we cannot honour are refused naming the
flag: ``-admin-addr`` (Go's pprof listener) with an address, ``-demo-routes``
set. ``pineapple-run`` is ``run`` with Go's flags
and Go's default of no deadline; it exits 1 with Go's usage line when
``-config`` or ``-request`` is missing. The differences that remain are in
``docs/coming-from-go.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pineapple._config_file import add_max_config_bytes
from pineapple.commands import DefaultsOnceFormatter
from pineapple.plugins import add_plugin_argument

from ._cli import add_serve_arguments, serve_command
from ._go_flags import GoFlagError, go_bool, go_command_line, go_duration, go_int
from ._run_cli import add_run_arguments, run_command

__all__ = ["run_args", "run_main", "server_args", "server_main"]

GO_ADDR = ":8080"
"""Go's default listen address: port 8080 on every interface."""
GO_MAX_BODY_BYTES = 10 << 20
"""Go's default request body limit (``-max-body-size 0``): 10 MiB."""
_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class GoBound:
    """A Go flag that sets one of ``serve``'s bounds (its twin, in our unit)."""

    flag: str
    """Go's name (``write-timeout``)."""
    twin: str
    """The ``serve`` option it sets, as its ``dest`` (``write_timeout_ms``)."""
    go_default: int
    """Go's value for 0 (or for the flag left out), in the twin's unit."""
    to_twin: Callable[[int], int]
    """Go's value (nanoseconds, bytes) in the twin's unit."""

    @property
    def dest(self) -> str:
        return self.flag.replace("-", "_")


def _ns_to_ms(ns: int) -> int:
    # Rounded up: a positive sub-millisecond timeout stays a timeout (ours: 0 is none).
    return -(-ns // _NS_PER_MS)


GO_BOUNDS = (
    GoBound("read-header-timeout", "read_header_timeout_ms", 10_000, _ns_to_ms),
    GoBound("read-timeout", "read_timeout_ms", 30_000, _ns_to_ms),
    GoBound("write-timeout", "write_timeout_ms", 60_000, _ns_to_ms),
    GoBound("idle-timeout", "idle_timeout_ms", 120_000, _ns_to_ms),
    GoBound("max-body-size", "max_body_bytes", GO_MAX_BODY_BYTES, int),
)
"""Go's timeouts and body limit, each onto its ``serve`` twin."""

GO_DRAIN_SECONDS = 5.0
"""How long Go's server lets in-flight requests finish after SIGTERM (its ``Shutdown``
deadline); ``serve``'s ``--drain-seconds`` is the same bound."""

GO_SERVER_DEFAULTS: dict[str, object] = {
    "addr": GO_ADDR,
    "request_timeout_ms": 0,
    "drain_seconds": GO_DRAIN_SECONDS,
    **{bound.twin: bound.go_default for bound in GO_BOUNDS},
}
"""``serve``'s settings that ``pineapple-server`` starts from instead (Go's behaviour)."""


def server_parser() -> argparse.ArgumentParser:
    """``pineapple-server``'s options: Go's flags, then every ``serve`` flag."""
    parser = argparse.ArgumentParser(
        prog="pineapple-server",
        description="Serve a unified config over HTTP, taking the Go engine's "
        "pineapple-server flags and defaults (-config c.json -addr :8080); every flag "
        "of `pineapple serve` is taken too. Flags: -name VALUE, -name=VALUE, --name VALUE.",
        formatter_class=DefaultsOnceFormatter,
        allow_abbrev=False,
    )
    go = parser.add_argument_group("the Go server's flags")
    go.add_argument("--config", default=None, metavar="PATH", help="the unified config JSON")
    go.add_argument(
        "--admin-addr",
        default="",
        metavar="ADDR",
        help="Go's pprof listener: refused unless empty (no pprof here; /metrics and /stats "
        "are on --addr)",
    )
    for bound, meaning in zip(
        GO_BOUNDS[:4], ("headers", "request", "response", "keep-alive"), strict=True
    ):
        go.add_argument(
            f"--{bound.flag}",
            type=go_duration,
            default=0,
            metavar="DURATION",
            help=f"Go's {bound.flag} for the {meaning} (300ms, 1.5s, 2m); 0: "
            f"{bound.go_default // 1000}s; sets --{bound.twin.replace('_', '-')}",
        )
    go.add_argument(
        "--max-body-size",
        type=go_int,
        default=0,
        metavar="BYTES",
        help="largest /execute body, 413 above; 0: 10 MiB; sets --max-body-bytes",
    )
    go.add_argument(
        "--watch",
        type=go_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="reload when the config file changes (-watch=false: --no-watch)",
    )
    go.add_argument(
        "--demo-routes",
        type=go_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="Go's POST /api/echo for its cross-validation: refused when true",
    )
    add_max_config_bytes(parser)
    add_plugin_argument(parser)
    add_serve_arguments(parser)
    parser.set_defaults(prog="pineapple-server", **GO_SERVER_DEFAULTS)
    return parser


def server_args(argv: Sequence[str]) -> argparse.Namespace:
    """``pineapple-server ARGV`` as ``serve_command`` reads it; :class:`GoFlagError` naming
    the flag that cannot be honoured (argparse's own errors exit 2, as Go's do)."""
    parser = server_parser()
    line = go_command_line(parser, argv)
    args = parser.parse_args(line.argv)
    for bound in GO_BOUNDS:
        if bound.dest not in line.given:
            continue
        ours = "-" + bound.twin.replace("_", "-")
        if bound.twin in line.given:
            raise GoFlagError(f"-{bound.flag} and {ours} set the same bound: give one of them")
        value = getattr(args, bound.dest)
        if value < 0:
            raise GoFlagError(
                f"-{bound.flag} must be >= 0 (0: Go's default; none at all: {ours} 0)"
            )
        setattr(args, bound.twin, bound.to_twin(value) or bound.go_default)
    if "watch" in line.given and "no_watch" in line.given:
        raise GoFlagError("-watch and -no-watch both given: give one of them")
    args.no_watch = args.no_watch or not args.watch
    if args.admin_addr:
        raise GoFlagError(
            f"-admin-addr {args.admin_addr}: Go's pprof listener has no counterpart here "
            "(profile with py-spy; /metrics and /stats answer on -addr); leave it out"
        )
    if args.demo_routes:
        raise GoFlagError(
            "-demo-routes: Go's POST /api/echo (its cross-validation route) is not served "
            "here; leave it out"
        )
    if args.config is None and args.fleet is None:
        raise GoFlagError("-config is required (the unified config JSON)")
    return args


def server_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pineapple-server`` console script."""
    try:
        args = server_args(sys.argv[1:] if argv is None else argv)
    except GoFlagError as exc:
        return _refuse("pineapple-server", exc)
    return serve_command(args)


def run_parser() -> argparse.ArgumentParser:
    """``pineapple-run``'s options: Go's three flags, then every ``run`` flag."""
    parser = argparse.ArgumentParser(
        prog="pineapple-run",
        description="Execute a unified config once on a request and print the response as "
        "indented JSON, taking the Go engine's pineapple-run flags "
        "(-config c.json -request r.json [-static-resources s.json]); every flag of "
        "`pineapple run` is taken too.",
        formatter_class=DefaultsOnceFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--config", default=None, metavar="PATH", help="the unified config JSON")
    add_max_config_bytes(parser)
    add_plugin_argument(parser)
    add_run_arguments(parser, request_required=False)
    parser.set_defaults(prog="pineapple-run", timeout_ms=0)  # Go's run has no deadline
    return parser


GO_RUN_USAGE = (
    "Usage: pineapple-run -config <pipeline.json> -request <request.json> "
    "[-static-resources <resources.json>]"
)


def run_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """``pineapple-run ARGV`` as ``run_command`` reads it; None when ``-config`` or
    ``-request`` is missing (Go prints its usage and exits 1)."""
    parser = run_parser()
    args = parser.parse_args(go_command_line(parser, argv).argv)
    if not args.config or not args.request:
        return None
    return args


def run_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pineapple-run`` console script."""
    try:
        args = run_args(sys.argv[1:] if argv is None else argv)
    except GoFlagError as exc:
        return _refuse("pineapple-run", exc)
    if args is None:
        print(GO_RUN_USAGE, file=sys.stderr)
        return 1
    return run_command(args)


def _refuse(prog: str, exc: GoFlagError) -> int:
    print(f"{prog}: {exc} (see {prog} -help)", file=sys.stderr)
    return 2
