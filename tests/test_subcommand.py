"""Every ``pineapple`` subcommand is added one way (``pineapple._subcommand``)."""

from __future__ import annotations

import argparse

from pineapple._subcommand import add_subcommand
from pineapple.cli import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _option(parser: argparse.ArgumentParser, dest: str) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest), None)


def test_add_subcommand_shows_defaults_and_sets_func_config_and_plugin() -> None:
    root = argparse.ArgumentParser(prog="pineapple")
    sub = add_subcommand(
        root.add_subparsers(dest="command"),
        "thing",
        lambda args: 7,
        help="do a thing",
        config=True,
        plugins=True,
    )
    sub.add_argument("--size", type=int, default=3, help="how big")
    assert "(default: 3)" in sub.format_help()
    args = root.parse_args(["thing", "c.json", "--plugin", "p"])
    assert (args.config, args.plugin, args.func(args)) == ("c.json", ["p"], 7)


def test_config_and_plugin_are_spelled_alike_in_every_subcommand() -> None:
    plugins: set[tuple[object, object]] = set()
    configs: set[object] = set()
    for parser in _subcommands().values():
        plugin = _option(parser, "plugin")
        if plugin is not None:
            plugins.add((plugin.metavar, plugin.help))
        config = _option(parser, "config")
        if config is not None:
            configs.add(config.help)
    assert len(plugins) == 1, plugins
    assert configs == {"path of the unified config JSON"}
