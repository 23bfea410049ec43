"""``pineapple compile FLOW.py -o CONFIG.json`` (registered by ``pineapple.cli``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from pineapple.commands import Subparsers, add_subcommand
from pineapple.plugins import PluginError, import_plugins

from ._advice import advice
from ._compile import compile_json
from ._errors import ValidationError
from ._load import load_flow

__all__ = ["add_compile_command", "run_compile"]


def run_compile(args: argparse.Namespace) -> int:
    """Compile a flow (Python DSL) to a unified JSON config.

    Compile FLOW.py, which defines `flow` (a dsl.Flow or a function returning
    one), to the unified JSON config; write it to --output (or standard
    output). Exit 0, or 1 on a flow error.
    """
    try:
        import_plugins(args.plugin)
        flow = load_flow(args.flow, args.attr)
        text = compile_json(flow)
    except (ValidationError, PluginError) as exc:
        print(f"pineapple compile: error: {exc}", file=sys.stderr)
        return 1
    for warning in advice(flow):
        print(f"pineapple compile: warning: {warning}", file=sys.stderr)
    if args.output is None or str(args.output) == "-":
        sys.stdout.write(text)
        return 0
    write_atomically(Path(args.output), text)
    print(f"pineapple compile: wrote {args.output}", file=sys.stderr)
    return 0


def write_atomically(path: Path, text: str) -> None:
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


def add_compile_command(subparsers: Subparsers) -> None:
    """Register ``compile`` on the ``pineapple`` parser."""
    parser = add_subcommand(subparsers, "compile", run_compile, plugins=True)
    parser.add_argument(
        "flow", type=Path, metavar="FLOW.py", help="the Python file that defines the flow"
    )
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
