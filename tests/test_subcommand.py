"""Every ``pineapple`` subcommand is added one way (``pineapple.commands``)."""

from __future__ import annotations

import argparse

import pytest

import server
from pineapple._config_file import DEFAULT_MAX_CONFIG_BYTES
from pineapple.cli import build_parser
from pineapple.commands import add_subcommand


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _option(parser: argparse.ArgumentParser, dest: str) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest), None)


def _thing(args: argparse.Namespace) -> int:
    """Do a thing.

    All about the thing.
    """
    return 7


def test_add_subcommand_shows_defaults_and_sets_func_config_and_plugin() -> None:
    root = argparse.ArgumentParser(prog="pineapple")
    sub = add_subcommand(
        root.add_subparsers(dest="command"), "thing", _thing, config=True, plugins=True
    )
    sub.add_argument("--size", type=int, default=3, help="how big")
    assert "(default: 3)" in sub.format_help()
    assert "All about the thing." in sub.format_help()
    assert "Do a thing\n" in root.format_help().replace("  ", "")
    args = root.parse_args(["thing", "c.json", "--plugin", "p"])
    assert (args.config, args.plugin, args.func(args)) == ("c.json", ["p"], 7)
    assert args.max_config_bytes == DEFAULT_MAX_CONFIG_BYTES


def test_a_subcommand_without_a_docstring_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'bare'.*needs a docstring"):
        add_subcommand(argparse.ArgumentParser().add_subparsers(), "bare", lambda args: 0)


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


def test_every_subcommand_reading_a_config_bounds_it_with_the_one_default() -> None:
    readers = {}
    for name, parser in _subcommands().items():
        if _option(parser, "config") is not None:
            limit = _option(parser, "max_config_bytes")
            assert limit is not None, f"pineapple {name} reads a config without --max-config-bytes"
            readers[name] = (tuple(limit.option_strings), limit.default)
    assert set(readers) == {"serve", "check", "run", "dag"}
    assert set(readers.values()) == {(("--max-config-bytes",), DEFAULT_MAX_CONFIG_BYTES)}
    assert server.Config.max_config_bytes == DEFAULT_MAX_CONFIG_BYTES
