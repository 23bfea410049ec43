"""How every package adds its subcommand to the ``pineapple`` command line.

:func:`add_subcommand` is the one place that decides what a subcommand
parser looks like: its ``--help`` shows each option's default, it runs
``func(args) -> exit code``, and it takes the config path and the
repeatable ``--plugin`` option when asked to, spelled alike everywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias

from .plugins import add_plugin_argument

__all__ = ["Subparsers", "add_subcommand"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``ArgumentParser.add_subparsers()`` returns; each ``add_*_command`` takes it."""


def add_subcommand(
    subparsers: Subparsers,
    name: str,
    func: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str | None = None,
    config: bool = False,
    plugins: bool = False,
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` that runs ``func`` and return its parser.

    ``config``: it takes the unified config's path as its first positional
    argument (``args.config``). ``plugins``: it takes ``--plugin``
    (``args.plugin``, see :func:`pineapple.plugins.add_plugin_argument`).
    """
    parser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.set_defaults(func=func)
    if config:
        parser.add_argument("config", help="path of the unified config JSON")
    if plugins:
        add_plugin_argument(parser)
    return parser
