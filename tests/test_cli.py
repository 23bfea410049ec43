"""The ``pineapple`` command line as a new user meets it: --version and --help."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pineapple
from pineapple.cli import build_parser
from pineapple.commands import DefaultsOnceFormatter

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


@pytest.mark.parametrize("module", ["pineapple", "pineapple.cli"])
def test_python_dash_m_is_the_same_command(module: str) -> None:
    # Once `python -m pineapple.cli serve ...` parsed nothing and exited 0.
    result = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=30
    )
    assert (result.returncode, result.stdout.strip()) == (0, f"pineapple {pineapple.__version__}")
    result = subprocess.run(
        [sys.executable, "-m", module, "no-such-command"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "invalid choice: 'no-such-command'" in result.stderr


def _leaves() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand that runs (``admin status``: the actions of a command that has
    them), by its name after ``pineapple``."""
    found: dict[str, argparse.ArgumentParser] = {}
    todo = list(_subcommands().items())
    while todo:  # bounded: the parser's tree (``admin config rollback``: three deep)
        name, sub = todo.pop()
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        if not nested:
            found[name] = sub
        for action in nested:
            todo += [(f"{name} {child}", parser) for child, parser in action.choices.items()]
    return found


@pytest.mark.parametrize("name", sorted(_leaves()))
def test_every_option_has_help_that_shows_its_default(name: str) -> None:
    sub = _leaves()[name]
    text = sub.format_help()
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = "/".join(action.option_strings) or action.dest
        assert action.help, f"pineapple {name}: {label} has no help text"
        if action.option_strings and action.default is not argparse.SUPPRESS:
            shown = DefaultsOnceFormatter(name)._get_help_string(action)
            # Either argparse adds the default, or the help says in words what it is.
            assert shown is not None and re.search(r"%\(default\)s|\bdefault\b", shown), label
    assert "(default:" in text


def _option_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``option -> its help as --help prints it`` (defaults filled in, one line)."""
    formatter = parser._get_formatter()
    helps = {}
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            label = "/".join(action.option_strings) or action.dest
            helps[label] = " ".join(formatter._expand_help(action).split())
    return helps


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_help_prints_each_default_once(name: str) -> None:
    sub = _subcommands()[name]
    helps = _option_helps(sub)
    assert helps, name
    for label, text in helps.items():
        said = re.findall(r"\bdefault\b", text, re.IGNORECASE)
        assert len(said) <= 1, f"pineapple {name} {label}: {text!r}"
    # And in the text as printed (wrapped over lines): no "(default ...) (default ...)".
    printed = " ".join(sub.format_help().split())
    assert not re.search(r"\(default[^()]*\) \(default", printed), printed


def test_a_help_that_names_its_default_is_printed_as_written() -> None:
    helps = _option_helps(_subcommands()["serve"])
    assert helps["--shared-dir"].endswith("(default /dev/shm)"), helps["--shared-dir"]
    assert helps["--addr"].endswith("(default: 127.0.0.1:8080)"), helps["--addr"]
