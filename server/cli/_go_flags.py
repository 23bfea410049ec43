"""Go's command-line syntax (its ``flag`` package) read onto our argparse parsers.

``pineapple-server`` and ``pineapple-run`` take the Go tools' command lines
as written in a Deployment: ``-config c.json -addr :8080``, ``--flag value``,
``-flag=value``, bool flags set by their name alone or by ``-flag=false``.
:func:`go_command_line` rewrites such a command line into the tokens argparse
reads (``--flag=value``), so every flag keeps one definition: the argparse
option of ``serve``/``run`` (or of the drop-in, for Go's own flags). The rules
are Go's: a flag is ``-name`` or ``--name``, optionally ``=value``; a non-bool
flag without ``=`` takes the next token whatever it looks like; the flags end
at the first token that is not one (``-`` included) or after ``--``.

Go's values: :func:`go_duration` (``time.ParseDuration``: ``300ms``, ``1.5s``,
``2h45m``) and :func:`go_bool` (``strconv.ParseBool``).

``pineapple serve`` and ``pineapple run`` keep their own syntax; a Go spelling
given to them (``pineapple serve -config c.json``) is answered by
:func:`add_go_spelling_hints` with a hint naming the drop-in.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RUN_FLAGS",
    "SERVER_FLAGS",
    "GoCommandLine",
    "GoFlagError",
    "add_go_spelling_hints",
    "go_bool",
    "go_command_line",
    "go_duration",
    "go_int",
]

SERVER_FLAGS = (
    "config",
    "addr",
    "admin-addr",
    "read-header-timeout",
    "read-timeout",
    "write-timeout",
    "idle-timeout",
    "max-body-size",
    "watch",
    "demo-routes",
)
"""Every flag of the Go engine's ``cmd/pineapple-server``, in its spelling."""

RUN_FLAGS = ("config", "request", "static-resources")
"""Every flag of the Go engine's ``cmd/pineapple-run``."""

MAX_ARGS = 1024
"""Most tokens one command line may hold (the loop over them is bounded by it)."""
MAX_DURATION_CHARS = 64
"""A longer duration text is refused before it is read."""

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign, as Go accepts it
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_NUMBER = "0123456789."
_MAX_NS = 2**63 - 1  # Go's time.Duration is an int64 of nanoseconds
_TRUE = ("1", "t", "T", "true", "TRUE", "True")
_FALSE = ("0", "f", "F", "false", "FALSE", "False")


class GoFlagError(ValueError):
    """A command line the Go tools' syntax refuses, or a Go flag we cannot honour: the
    message names the flag."""


def go_bool(text: str) -> bool:
    """A Go bool flag's value: ``1 t T true TRUE True`` or ``0 f F false FALSE False``."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"not a Go bool (true, false, 1, 0, t, f): {text!r}")


def go_int(text: str) -> int:
    """A Go ``int64`` flag's value (``strconv.ParseInt(s, 0, 64)``): decimal, ``0x``, ``0o``,
    ``0b``, a leading ``0`` for octal, ``_`` between digits."""
    sign, digits = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        digits = "0o" + digits[1:]  # Go's leading-zero octal
    try:
        value = int(sign + digits, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a Go integer: {text!r}") from None
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError(f"integer out of range (int64): {text!r}")
    return value


def go_duration(text: str) -> int:
    """A Go duration (``time.ParseDuration``) in nanoseconds: ``0``, ``300ms``, ``1.5s``,
    ``2h45m``, ``-1s``; units ns, us (µs), ms, s, m, h.

    Bounded: the text is at most :data:`MAX_DURATION_CHARS` characters, read once.
    """
    if len(text) > MAX_DURATION_CHARS:
        raise argparse.ArgumentTypeError(f"a duration of more than {MAX_DURATION_CHARS} chars")
    rest, sign = text, 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise _not_a_duration(text)
    total = 0
    while rest:  # bounded: each pass consumes at least one digit and one unit character
        number, rest = _take(rest, _NUMBER)
        unit, rest = _take(rest, None)
        whole, _, fraction = number.partition(".")
        if not (whole or fraction) or "." in fraction or unit not in _NS_PER_UNIT:
            raise _not_a_duration(text)
        scale = _NS_PER_UNIT[unit]
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX_NS:
            raise argparse.ArgumentTypeError(f"duration out of range: {text!r}")
    return sign * total


def _take(text: str, chars: str | None) -> tuple[str, str]:
    """The longest head of ``text`` made of ``chars`` (None: of anything but digits and
    ``.``), and the rest."""
    end = 0
    for char in text:  # bounded by len(text)
        wanted = char not in _NUMBER if chars is None else char in chars
        if not wanted:
            break
        end += 1
    return text[:end], text[end:]


def _not_a_duration(text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(
        f"not a Go duration (like 300ms, 1.5s, 2m, 1h30m; units ns us ms s m h): {text!r}"
    )


@dataclass(frozen=True)
class GoCommandLine:
    """A Go-style command line rewritten for argparse."""

    argv: list[str]
    """The tokens for ``parser.parse_args``: ``--name=value`` and bare ``--name``."""
    given: frozenset[str]
    """The ``dest`` of every option the command line set (a flag left out: its default)."""


def go_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> GoCommandLine:
    """``argv`` in Go's flag syntax, rewritten onto ``parser``'s options.

    An option whose action takes no value (``store_true``, ``--help``) is a Go
    bool flag: ``-name`` or ``-name=true`` sets it, ``-name=false`` leaves it
    unset, the last one given wins. An option typed :func:`go_bool` is a Go
    bool flag too, passed as ``--name=VALUE``. Every other option takes
    ``=value`` or the next token, whatever it looks like (Go's rule).
    :class:`GoFlagError` names a flag the parser does not define, a missing
    value, bad syntax, or a token left after the flags.
    """
    if len(argv) > MAX_ARGS:
        raise GoFlagError(f"more than {MAX_ARGS} command-line arguments")
    options = _options(parser)
    out: list[str] = []
    switches: dict[str, bool] = {}
    given: set[str] = set()
    index = 0
    while index < len(argv):  # bounded: each pass consumes one or two tokens
        token = argv[index]
        index += 1
        if token == "--":
            break
        if len(token) < 2 or not token.startswith("-"):
            index -= 1
            break
        body = token[2:] if token.startswith("--") else token[1:]
        if not body or body[0] in "-=":
            raise GoFlagError(f"bad flag syntax: {token}")
        name, eq, value = body.partition("=")
        action = options.get(name)
        if action is None:
            raise GoFlagError(f"flag provided but not defined: -{name}")
        given.add(action.dest)
        spelled = max(action.option_strings, key=len)  # argparse's own spelling of it
        if action.nargs == 0:
            switches[spelled] = _switch(name, value) if eq else True
        elif action.type is go_bool:
            out.append(f"{spelled}={value if eq else 'true'}")
        else:
            if not eq:
                if index >= len(argv):
                    raise GoFlagError(f"flag needs an argument: -{name}")
                value = argv[index]
                index += 1
            out.append(f"{spelled}={value}")
    if index < len(argv):
        raise GoFlagError(
            f"takes flags only; {argv[index]!r} is not one (flags are -name VALUE or -name=VALUE)"
        )
    out.extend(spelled for spelled, on in switches.items() if on)
    return GoCommandLine(out, frozenset(given))


def _switch(name: str, value: str) -> bool:
    try:
        return go_bool(value)
    except argparse.ArgumentTypeError as exc:
        raise GoFlagError(f"invalid boolean value {value!r} for -{name}: {exc}") from None


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option of ``parser`` by its name without dashes (``h`` and ``help`` alike)."""
    # argparse keeps its actions in ``_actions`` (no public accessor; stable since 2.7).
    return {
        spelling.lstrip("-"): action
        for action in parser._actions
        for spelling in action.option_strings
    }


def add_go_spelling_hints(
    parser: argparse.ArgumentParser, drop_in: str, flags: Sequence[str]
) -> None:
    """Answer the Go tool's spelling of each of ``flags`` on ``parser`` (``pineapple serve
    -config c.json``) with a usage error naming ``drop_in``, the command that takes it.

    ``-name`` always (a single dash never names one of our options), ``--name``
    where the parser has no option of that name; hidden from ``--help``.
    """
    taken = set(_options(parser))
    spellings = [f"-{flag}" for flag in flags]
    spellings += [f"--{flag}" for flag in flags if flag not in taken]
    for spelling in spellings:
        parser.add_argument(
            spelling,
            action=_GoSpelling,
            nargs="?",
            dest=argparse.SUPPRESS,  # sets nothing: it only ever answers with the hint
            help=argparse.SUPPRESS,
            drop_in=drop_in,
        )


_EXAMPLES = {
    "pineapple-server": "-config c.json -addr :8080",
    "pineapple-run": "-config c.json -request r.json",
}


class _GoSpelling(argparse.Action):
    """A Go tool's flag on one of our subcommands: a usage error with the way to say it."""

    def __init__(self, *args: Any, drop_in: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drop_in = drop_in

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        example = _EXAMPLES[self.drop_in]
        parser.error(
            f"{option_string} is the Go tool's spelling. {parser.prog} takes CONFIG as its "
            f"first argument and --flags (see --help); `{self.drop_in}` takes the Go "
            f"tool's flags and defaults: {self.drop_in} {example}"
        )
