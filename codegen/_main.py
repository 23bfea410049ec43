"""``python -m codegen [--check] [--out DIR] [--plugin MODULE|FILE.py]...``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pineapple.commands import Subparsers, add_subcommand
from pineapple.plugins import add_plugin_argument

from ._errors import CodegenError
from ._files import default_target, render_all, render_plugins, stale_files, write_files

__all__ = ["add_arguments", "add_codegen_command", "codegen_command", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``codegen`` (shared with ``pineapple codegen``)."""
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a generated file is missing or stale",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory to write into (default: dsl/generated of the dsl package; "
        "required with --plugin)",
    )
    add_plugin_argument(parser)


def run(check: bool = False, out: Path | None = None, plugins: Sequence[str] = ()) -> int:
    """Generate (or with ``check`` verify) the DSL files; returns the exit code.

    With ``plugins``, only the types those plugins register are written, into
    ``out`` (the plugin's own package), and ``operators.py`` also defines ``Flow``.
    """
    if plugins and out is None:
        print("codegen: error: --plugin needs --out DIR (a folder of your own)", file=sys.stderr)
        return 2
    try:
        target = out or default_target()
        files = render_plugins(plugins) if plugins else render_all()
    except CodegenError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 1
    if check:
        stale = stale_files(target, files)
        for name in stale:
            print(f"codegen: {target / name} is stale; run `python -m codegen`", file=sys.stderr)
        return 1 if stale else 0
    for name in write_files(target, files):
        print(f"codegen: wrote {target / name}")
    return 0


def add_codegen_command(subparsers: Subparsers) -> None:
    """Register ``codegen`` on the ``pineapple`` parser."""
    add_arguments(add_subcommand(subparsers, "codegen", codegen_command))


def codegen_command(args: argparse.Namespace) -> int:
    """Write the typed DSL classes from the registries.

    Write dsl/generated/resources.py and operators.py from the resource and
    operator registries (built-ins, entry-point and --plugin plugins).
    """
    return run(check=args.check, out=args.out, plugins=args.plugin)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m codegen``."""
    parser = argparse.ArgumentParser(
        prog="python -m codegen",
        description="Write typed DSL classes from the resource and operator registries.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(check=args.check, out=args.out, plugins=args.plugin)
