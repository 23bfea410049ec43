"""The ``pineapple.commands`` contract: how a package adds subcommands to ``pineapple``.

A package (ours or a third party's) names a callable in the
``pineapple.commands`` entry-point group (:data:`COMMANDS_GROUP`), e.g. in its
``pyproject.toml``::

    [project.entry-points."pineapple.commands"]
    mine = "mypackage._cli:add_commands"

``pineapple`` calls it once with the subparsers (:data:`Subparsers`); it adds
each of its subcommands with :func:`add_subcommand`, which decides what every
subcommand looks like (its help is the function's docstring, each option's
default shows once, ``config=True`` adds the config path and
``--max-config-bytes``, ``plugins=True`` adds ``--plugin``)::

    from pineapple.commands import Subparsers, add_subcommand

    def add_commands(subparsers: Subparsers) -> None:
        add_subcommand(subparsers, "hello", hello, config=True)

    def hello(args: argparse.Namespace) -> int:
        "Say hello to the config at CONFIG."
        print("hello", args.config)
        return 0

``server``, ``dsl`` and ``codegen`` add theirs this way; ``tests/test_public_api.py``
pins ``__all__``.
"""

from ._subcommand import COMMANDS_GROUP as COMMANDS_GROUP
from ._subcommand import DefaultsOnceFormatter as DefaultsOnceFormatter
from ._subcommand import Subparsers as Subparsers
from ._subcommand import add_subcommand as add_subcommand

__all__ = ["COMMANDS_GROUP", "DefaultsOnceFormatter", "Subparsers", "add_subcommand"]
