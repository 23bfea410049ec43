"""``add_subcommand``: how every package adds its subcommand to the ``pineapple`` command line.

The contract is public in :mod:`pineapple.commands` (read it there).
:func:`add_subcommand` is the one place that decides what a subcommand
parser looks like: its ``--help`` shows each option's default once, it runs
``func(args) -> exit code``, its help is ``func``'s docstring (the first
line in the list of subcommands, all of it above the options, as click
does), and it takes the config path (with ``--max-config-bytes``, the bound
of its read) and the repeatable ``--plugin`` option when asked to, spelled
alike everywhere.
"""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Callable
from typing import TypeAlias

from ._config_file import add_max_config_bytes
from .plugins import add_plugin_argument

__all__ = ["COMMANDS_GROUP", "DefaultsOnceFormatter", "Subparsers", "add_subcommand"]

COMMANDS_GROUP = "pineapple.commands"
"""The entry-point group whose callables add subcommands (``add(subparsers)``)."""

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``ArgumentParser.add_subparsers()`` returns; each ``add_*_command`` takes it."""


_NAMES_DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)


class DefaultsOnceFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: ...)" after each option's help, unless the help names its own.

    A help text that already says what the default means ("(default: standard
    output)") is shown as written; argparse would add "(default: None)" after it.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if _NAMES_DEFAULT.search(text):
            return text
        return super()._get_help_string(action)


def add_subcommand(
    subparsers: Subparsers,
    name: str,
    func: Callable[[argparse.Namespace], int],
    *,
    description: str | None = None,
    config: bool = False,
    config_optional: bool = False,
    plugins: bool = False,
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` that runs ``func`` and return its parser.

    ``func``'s docstring is the help: its first line (without the final
    period) in ``pineapple --help``, the whole of it (or ``description``,
    when given) in ``pineapple NAME --help``. ``config``: it takes the
    unified config's path as its first positional argument
    (``args.config``) and ``--max-config-bytes`` (``args.max_config_bytes``,
    see :func:`pineapple._config_file.add_max_config_bytes`); with
    ``config_optional`` the path may be left out (``args.config`` None: a fleet
    pod serves the fleet's config). ``plugins``:
    it takes ``--plugin`` (``args.plugin``, see
    :func:`pineapple.plugins.add_plugin_argument`).
    """
    doc = inspect.cleandoc(func.__doc__ or "")
    if not doc:
        raise ValueError(f"subcommand {name!r}: {func!r} needs a docstring (its --help text)")
    parser = subparsers.add_parser(
        name,
        help=doc.split("\n", 1)[0].rstrip("."),
        description=doc if description is None else description,
        formatter_class=DefaultsOnceFormatter,
    )
    parser.set_defaults(func=func)
    if config:
        if config_optional:
            parser.add_argument(
                "config", nargs="?", default=None, help="path of the unified config JSON"
            )
        else:
            parser.add_argument("config", help="path of the unified config JSON")
        add_max_config_bytes(parser)
    if plugins:
        add_plugin_argument(parser)
    return parser
