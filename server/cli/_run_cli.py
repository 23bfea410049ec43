"""``pineapple run CONFIG --request FILE|-``: one execution, the response on stdout.

The shape of the Go engine's ``pineapple-run``: the config's resources are
loaded by a real :class:`~pineapple.resource.Manager` (a failure to load
them is reported on stderr and the run goes on without them, as Go does),
or, with ``--static-resources FILE`` (a JSON object ``name -> value``),
exactly those values are the resources and the config's own are not
fetched. The response ``{"common": ..., "items": ...}`` is printed as Go's
indented ``json.Encoder`` writes it; any failure prints the error on stderr
and exits 1. ``--trace`` runs with the engine's trace (as a request with
``"_return_trace": true`` does on the server): the response gains the
server's ``trace`` list (one entry per operator that started: ``name``,
``duration_ms``, ``skipped``, and snapshots for ``debug`` operators), and a
failed run prints that list on stderr after the error. The engine and the
manager are closed on every path.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pineapple import Context, PineappleError, resource
from pineapple._json_object import JSONObjectError, loads_object
from pineapple.commands import Subparsers, add_subcommand
from pineapple.engine import Engine
from pineapple.engine.http import go_json

from .._build import import_plugins
from .._build_error import BuildError
from .._config import Config
from .._config_read import read_config_file
from .._registries import operator_registry, resource_registry
from ._go_flags import RUN_FLAGS, add_go_spelling_hints
from ._json_indent import indent_json

__all__ = ["add_run_arguments", "add_run_command", "run_command"]

DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_MAX_REQUEST_BYTES = Config.max_body_bytes


class RunError(Exception):
    """A failure of ``pineapple run``: its message is what stderr shows.

    ``trace`` is the run's trace (``--trace``) as JSON text, printed after the message."""

    def __init__(self, message: str, trace: bytes | None = None) -> None:
        super().__init__(message)
        self.trace = trace


def add_run_command(subparsers: Subparsers) -> None:
    """``pineapple run CONFIG --request FILE|- [--static-resources FILE] ...``."""
    parser = add_subcommand(subparsers, "run", run_command, config=True, plugins=True)
    add_run_arguments(parser)
    add_go_spelling_hints(parser, "pineapple-run", RUN_FLAGS)


def add_run_arguments(parser: argparse.ArgumentParser, *, request_required: bool = True) -> None:
    """Every option of ``run`` but CONFIG, ``--plugin`` and ``--max-config-bytes``: the
    flags ``pineapple run`` and ``pineapple-run`` share (``run_command`` reads them)."""
    parser.set_defaults(prog="pineapple run")
    parser.add_argument(
        "--request",
        required=request_required,
        help='request JSON file ({"common", "items"}), - for stdin',
    )
    parser.add_argument(
        "--static-resources",
        metavar="FILE",
        help="JSON object name -> value used as the resources instead of the config's",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        help="deadline of the execution in ms (0: none)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        metavar="N",
        help="refuse a request (or static resources) file bigger than N bytes",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="add the per-operator trace (name, duration_ms, skipped, snapshots) to the output",
    )
    parser.add_argument(
        "--bench-stubs",
        action="store_true",
        help="build on the benchmark registries (the public engines' stub operators and "
        "resource types)",
    )


def run_command(args: argparse.Namespace) -> int:
    """Execute a unified config once on a request and print the response.

    Build CONFIG, load its resources (or the --static-resources), run the
    request once and print the response as indented JSON; exit 1 with the
    error on failure (Go's pineapple-run).
    """
    logging.basicConfig(level=logging.ERROR, format="pineapple: %(message)s")
    if args.timeout_ms < 0 or args.max_request_bytes < 0:
        print(f"{args.prog}: --timeout-ms and --max-request-bytes must be >= 0", file=sys.stderr)
        return 2
    try:
        body = run_once(args)
    except RunError as exc:
        print(f"{args.prog}: {exc}", file=sys.stderr)
        if exc.trace is not None:
            print(f"trace: {exc.trace.decode()}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(body)
    sys.stdout.flush()
    return 0


def run_once(args: argparse.Namespace) -> bytes:
    """Everything but the printing: the response bytes, or :class:`RunError`."""
    try:
        import_plugins(args.plugin)
        config = read_config_file(Path(args.config), args.max_config_bytes)
    except BuildError as exc:
        raise RunError(f"error reading config: {exc.reason}") from None
    request = _parse_object(_read_input(args.request, args.max_request_bytes, "request"), "request")
    static = None
    if args.static_resources is not None:
        raw = _read_input(args.static_resources, args.max_request_bytes, "static resources")
        static = _parse_object(raw, "static resources")
    try:
        engine = Engine(config, registry=operator_registry(args.bench_stubs))
    except PineappleError as exc:
        raise RunError(f"error creating engine: {exc}") from None
    base_dir = Path(args.config).parent
    with engine, _resources(config, static, base_dir, args.prog, args.bench_stubs) as provider:
        ctx = resource.with_resources(Context(), provider) if provider is not None else Context()
        if args.timeout_ms:
            ctx = ctx.with_timeout(args.timeout_ms / 1000)
        try:
            result = engine.run(ctx, request, trace=args.trace)
        except PineappleError as exc:
            raise RunError(f"execution error: {exc}") from None
    trace = None
    if result.trace is not None:
        trace = [entry.to_dict() for entry in result.trace]  # bounded: one per operator
    if result.error is not None:
        raise RunError(
            f"execution error: {result.error}", None if trace is None else go_json(trace)
        )
    response: dict[str, Any] = {"common": result.common, "items": result.items}
    if trace is not None:
        response["trace"] = trace
    return indent_json(go_json(response)) + b"\n"


@contextmanager
def _resources(
    config: bytes, static: dict[str, Any] | None, base_dir: Path, prog: str, bench: bool
) -> Iterator[resource.ResourceProvider | None]:
    """The provider of the run: the static values, or a started Manager (stopped after)."""
    if static is not None:
        yield resource.Static(static)
        return
    manager = resource.Manager(resource_registry(bench))
    try:
        try:
            manager.load_from_root_config(config, base_dir=base_dir)
            manager.start()
        except PineappleError as exc:
            # As Go's pineapple-run: report, and run without the config's resources.
            print(f"{prog}: resources not loaded: {exc}", file=sys.stderr)
            yield None
            return
        yield manager
    finally:
        manager.stop()


def _read_input(spec: str, limit: int, what: str) -> bytes:
    """The bytes of a file, or of stdin for ``-``; refuses more than ``limit`` bytes."""
    if spec == "-":
        return _read_stream(sys.stdin.buffer, limit, what)
    try:
        return read_config_file(Path(spec), limit, "--max-request-bytes")
    except BuildError as exc:
        raise RunError(f"error reading {what}: {exc.reason}") from None


def _read_stream(stream: BinaryIO, limit: int, what: str) -> bytes:
    # Bounded by bytes: at most limit + 1 are read.
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise RunError(f"error reading {what} from stdin: more than the limit of {limit} bytes")
    return data


def _parse_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        return loads_object(data)
    except JSONObjectError as exc:
        raise RunError(f"error parsing {what}: {exc}") from None
