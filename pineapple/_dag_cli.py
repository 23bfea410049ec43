"""``pineapple dag CONFIG [--format dot|mermaid|svg] [--collapse N] [--group G] [-o FILE]``.

Prints (or writes) the operator graph the engine builds from CONFIG, the
same picture as ``GET /dag``. CONFIG is read as ``check`` and ``serve`` read
it (:mod:`pineapple._config_file`: regular files only, at most
``--max-config-bytes``); ``svg`` pipes the DOT text through Graphviz's
``dot`` program, which must be installed (Debian/Ubuntu: ``apt-get install
graphviz``; macOS: ``brew install graphviz``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from ._config_file import read_config_file
from ._subcommand import Subparsers, add_subcommand

__all__ = ["SVG_TIMEOUT_SECONDS", "GraphvizMissingError", "add_dag_command", "to_svg"]

SVG_TIMEOUT_SECONDS = 30.0
"""How long ``dot -Tsvg`` may run before it is killed."""


class GraphvizMissingError(RuntimeError):
    """``--format svg`` was asked for but Graphviz's ``dot`` is not on PATH."""

    def __init__(self) -> None:
        super().__init__(
            "--format svg needs Graphviz's `dot` program, which is not on PATH; install it "
            "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz) or use "
            "--format dot and render elsewhere"
        )


def to_svg(dot_text: str, timeout: float = SVG_TIMEOUT_SECONDS) -> str:
    """Render DOT text to SVG with Graphviz (killed after ``timeout`` seconds)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissingError
    done = subprocess.run(
        [exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"dot -Tsvg failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


def add_dag_command(subparsers: Subparsers) -> None:
    """Register ``dag``."""
    parser = add_subcommand(subparsers, "dag", dag_command, config=True, plugins=True)
    parser.add_argument(
        "--format",
        choices=("dot", "mermaid", "svg"),
        default="dot",
        help="dot (Graphviz), mermaid, or svg (rendered by Graphviz's `dot`)",
    )
    parser.add_argument("--collapse", type=int, default=0, help="fold sub-flows (levels)")
    parser.add_argument("--group", default=None, help="pipeline group (default: main)")
    parser.add_argument("-o", "--output", default=None, help="write here instead of stdout")


def dag_command(args: argparse.Namespace) -> int:
    """Print the operator graph of a config.

    The graph the engine builds from CONFIG, as GET /dag shows it; svg pipes
    the DOT text through Graphviz's dot. Exit 0, or 1 with the reason on
    stderr.
    """
    from pineapple import PineappleError, builtins, plugins
    from pineapple.engine import Engine

    try:
        builtins.load()
        plugins.import_plugins(args.plugin)
        data = read_config_file(Path(args.config), args.max_config_bytes)
        with Engine(data, registry=builtins.operator_registry()) as engine:
            fmt = "dot" if args.format == "svg" else args.format
            text = engine.render_dag(fmt, collapse=args.collapse, group=args.group)
        if args.format == "svg":
            text = to_svg(text)
    except (OSError, ValueError, RuntimeError, PineappleError, subprocess.TimeoutExpired) as exc:
        print(f"pineapple dag: {exc}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
