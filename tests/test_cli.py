"""The ``pineapple`` command line as a new user meets it: --version and --help."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import pineapple
from pineapple.cli import build_parser

PINEAPPLE = Path(sys.executable).with_name("pineapple")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_version_names_the_package_version() -> None:
    result = subprocess.run(
        [str(PINEAPPLE), "--version"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"pineapple {pineapple.__version__}"


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_has_help_that_shows_its_default(name: str) -> None:
    sub = _subcommands()[name]
    text = sub.format_help()
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = "/".join(action.option_strings) or action.dest
        assert action.help, f"pineapple {name}: {label} has no help text"
        if action.option_strings and action.default is not argparse.SUPPRESS:
            shown = argparse.ArgumentDefaultsHelpFormatter(name)._get_help_string(action)
            assert shown is not None and "%(default)s" in shown, label
    assert "(default:" in text
