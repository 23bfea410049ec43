"""The ``pineapple`` command line: one function per subcommand.

Add a subcommand by writing ``_add_<name>(subparsers)`` that registers its
parser with ``set_defaults(run=<function>)`` and listing it in
``_SUBCOMMANDS``. Each run function takes the parsed arguments and returns
the exit code (0 ok, 1 failure, 2 usage error).

Subcommands import what they need (``dsl``, ``codegen``, ``server``) inside
their functions, so each command loads only its own dependencies.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["main"]


def _compile(args: argparse.Namespace) -> int:
    from dsl import ValidationError, compile_json, load_flow

    try:
        flow = load_flow(args.flow, args.attr)
        text = compile_json(flow)
    except ValidationError as exc:
        print(f"pineapple compile: error: {exc}", file=sys.stderr)
        return 1
    if args.output is None or str(args.output) == "-":
        sys.stdout.write(text)
        return 0
    _write_atomically(Path(args.output), text)
    print(f"pineapple compile: wrote {args.output}", file=sys.stderr)
    return 0


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that a reader (a config watcher) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _add_compile(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compile",
        help="compile a flow (Python DSL) to a unified JSON config",
        description="Compile FLOW.py, which defines `flow` (a dsl.Flow or a function "
        "returning one), to the unified JSON config.",
    )
    parser.add_argument("flow", type=Path, metavar="FLOW.py")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="CONFIG.json",
        help="where to write the config (default: standard output)",
    )
    parser.add_argument(
        "--attr", default="flow", help="the name the flow has in the file (default: flow)"
    )
    parser.set_defaults(run=_compile)


def _codegen(args: argparse.Namespace) -> int:
    import codegen

    return codegen.run(check=args.check, out=args.out)


def _add_codegen(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    import codegen

    parser = subparsers.add_parser(
        "codegen",
        help="write the typed DSL classes from the registries",
        description="Write dsl/generated/resources.py and operators.py from the resource "
        "and operator registries (built-ins and entry-point plugins).",
    )
    codegen.add_arguments(parser)
    parser.set_defaults(run=_codegen)


_SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_compile,
    _add_codegen,
]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="pineapple", description="Pineapple: pipeline engine and resource manager."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in _SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pineapple`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    return run(args)
