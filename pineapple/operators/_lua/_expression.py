"""A script that is one ``return`` of its input fields: recognised, to be run inline.

A script of exactly the form ``function NAME() return E1, E2, ... end`` whose
expressions name nothing but the operator's input fields, and hold nothing but
literals (numbers, strings without escapes, ``nil``, ``true``, ``false``),
operators (arithmetic, comparison, ``..``, ``and``, ``or``, ``not``, ``#``) and
parentheses, calls no function, indexes nothing and writes nothing: its value is
all it does. The driver (``_driver``) then evaluates the expressions in its item
loop with the fields as locals, instead of setting each field as a global and
calling the function for each item. Where that path raises (arithmetic on a nil,
a string that is no number), the driver runs the request again through the
general loop, so every error, its text and its item included, is the general
path's. Anything else (another name, a call, an index, a table, a comment, a
long string, an escape) is not recognised, and the general loop runs it.

Bounds: one pass over the script's text (a config value, bounded by the
config's size), one token at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["INLINE_PREFIX", "InlineReturn", "field_slots", "inline_return"]

INLINE_PREFIX = "__pa_"
"""Names of the driver's own locals on the inline path; a field named so is never inlined."""

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>0[xX][0-9A-Fa-f]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<string>"[^"\\\n]*"|'[^'\\\n]*')
  | (?P<op>==|~=|<=|>=|\.\.|[-+*/%^<>\#(),;])
    """,
    re.VERBOSE,
)

_KEYWORDS = frozenset(
    {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in"}
    | {"local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}
)
_LITERALS = frozenset({"nil", "true", "false"})
_WORD_OPERATORS = frozenset({"and", "or", "not"})
_CALLABLE = frozenset({"name", "close", "string"})
"""Token kinds a ``(`` or a string may not follow: there it would be a call."""


@dataclass(frozen=True)
class InlineReturn:
    """The recognised script: its expression list, and the input fields it names."""

    expressions: str
    """The text after ``return``, as written (one or more expressions, comma separated)."""
    fields: frozenset[str]
    """The input fields the expressions name."""
    tokens: tuple[tuple[str, str], ...]
    """The expressions' tokens, (kind, text): kinds ``name``, ``number``, ``string``,
    ``literal``, ``op`` (``)`` included)."""


def _tokens(script: str) -> list[tuple[str, str, int]] | None:
    """The script's tokens (kind, text, where), or None at anything outside the language."""
    tokens: list[tuple[str, str, int]] = []
    at, end = 0, len(script)
    while at < end:  # bounded: every match consumes at least one character
        if script.startswith("--", at) or script.startswith("...", at):
            return None  # a comment (may be long), or varargs
        match = _TOKEN.match(script, at)
        if match is None:
            return None
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            text = match.group()
            tokens.append(("close" if text == ")" else kind, text, at))
        at = match.end()
    return tokens


def inline_return(script: str, function: str, fields: frozenset[str]) -> InlineReturn | None:
    """``script`` recognised as one ``return`` of ``fields`` by ``function``, or None."""
    tokens = _tokens(script)
    if tokens is None or len(tokens) < 7:
        return None
    head = [text for _, text, _ in tokens[:5]]
    if head != ["function", function, "(", ")", "return"] or tokens[-1][:2] != ("name", "end"):
        return None
    body = tokens[5:-1]
    if body and body[-1][1] == ";":
        body = body[:-1]
    if not body:
        return None
    named: set[str] = set()
    kept: list[tuple[str, str]] = []
    previous = "op"
    for kind, text, _ in body:
        if text == ";":
            return None
        if kind == "name":
            if text in _WORD_OPERATORS:
                kind = "op"
            elif text in _LITERALS:
                kind = "literal"
            elif text in fields and text not in _KEYWORDS and not text.startswith(INLINE_PREFIX):
                named.add(text)
            else:
                return None  # any other name: a global, a keyword, a function
        if (text == "(" or kind == "string") and previous in _CALLABLE:
            return None  # a call: f(...) or f "..."
        previous = kind
        kept.append(("op" if kind == "close" else kind, text))
    _, last_text, last_at = body[-1]
    expressions = script[body[0][2] : last_at + len(last_text)]
    return InlineReturn(expressions, frozenset(named), tuple(kept))


def field_slots(
    common_fields: tuple[str, ...], item_fields: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """Where each field name is read: its position among the item fields, else among the
    common fields (0-based). An item field wins over a common field of the same name and
    the last of a repeated field wins, as with the general loop's globals."""
    items = {name: k for k, name in enumerate(item_fields)}
    common = {name: k for k, name in enumerate(common_fields) if name not in items}
    return items, common
