"""The ``pineapple`` subcommands that live in the server: ``serve``, ``check``, ``run``, ``admin``.

Named in the ``pineapple.commands`` entry-point group (``pyproject.toml``);
``pineapple.cli`` calls :func:`add_commands` with its subparsers.
"""

from __future__ import annotations

from pineapple.commands import Subparsers

from ._admin_cli import add_admin_command
from ._cli import add_check_command, add_serve_command
from ._run_cli import add_run_command

__all__ = ["add_commands"]


def add_commands(subparsers: Subparsers) -> None:
    """Register ``serve``, ``check``, ``run`` and ``admin``."""
    add_serve_command(subparsers)
    add_check_command(subparsers)
    add_run_command(subparsers)
    add_admin_command(subparsers)
