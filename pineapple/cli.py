"""The ``pineapple`` command line: one subcommand per job.

The core knows none of the packages above it: each registers its own
subcommands through the ``pineapple.commands`` entry-point group (a callable
taking the subparsers: the contract is :mod:`pineapple.commands`; ``server``:
``serve``, ``check``, ``run``, ``admin``; ``dsl``: ``compile``; ``codegen``:
``codegen``), and this module assembles them, plus ``dag``, which lives in the
core.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable
from typing import cast

from ._subcommand import COMMANDS_GROUP, Subparsers

__all__ = ["build_parser", "main"]

_ORDER = ("server", "compile", "codegen")
"""How ``--help`` lists the groups we ship (a third party's come after, by name)."""


def add_commands(subparsers: Subparsers) -> None:
    """Every subcommand named in the ``pineapple.commands`` entry-point group."""
    points = importlib.metadata.entry_points(group=COMMANDS_GROUP)
    ranked = sorted(
        points, key=lambda e: (_ORDER.index(e.name) if e.name in _ORDER else 99, e.name)
    )
    for point in ranked:
        add = cast(Callable[[Subparsers], None], point.load())
        add(subparsers)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (each option's help shows its default)."""
    from pineapple import __version__

    parser = argparse.ArgumentParser(prog="pineapple")
    parser.add_argument("--version", action="version", version=f"pineapple {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_commands(subparsers)
    from ._dag_cli import add_dag_command

    add_dag_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pineapple`` console script."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    func = cast(Callable[[argparse.Namespace], int], args.func)
    return func(args)


if __name__ == "__main__":  # python -m pineapple.cli: the same command
    raise SystemExit(main())
