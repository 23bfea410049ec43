"""The ``pineapple`` command line: one subcommand per job.

Each package registers its own subcommands with an ``add_*_command(subparsers)``
function that sets ``func`` (arguments -> exit code); this module only
assembles them. The packages are imported when the parser is built, so a
command loads only what the parser needs plus its own package.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import cast

from ._subcommand import Subparsers

__all__ = ["build_parser", "main"]


def add_server_commands(subparsers: Subparsers) -> None:
    """``serve``, ``check``, ``run`` and ``admin`` (they live in the ``server`` package)."""
    from server._admin_cli import add_admin_command
    from server._cli import add_check_command, add_serve_command
    from server._run_cli import add_run_command

    add_serve_command(subparsers)
    add_check_command(subparsers)
    add_run_command(subparsers)
    add_admin_command(subparsers)


def add_dsl_commands(subparsers: Subparsers) -> None:
    """``compile`` (in ``dsl``) and ``codegen`` (in ``codegen``)."""
    from codegen import add_codegen_command
    from dsl._cli import add_compile_command

    add_compile_command(subparsers)
    add_codegen_command(subparsers)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (each option's help shows its default)."""
    from pineapple import __version__

    parser = argparse.ArgumentParser(prog="pineapple")
    parser.add_argument("--version", action="version", version=f"pineapple {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_server_commands(subparsers)
    add_dsl_commands(subparsers)
    from ._dag_cli import add_dag_command

    add_dag_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pineapple`` console script."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    func = cast(Callable[[argparse.Namespace], int], args.func)
    return func(args)
