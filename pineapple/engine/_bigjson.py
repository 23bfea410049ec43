"""Parsing a large request body in pieces, so that the parse never holds the GIL for long.

``orjson.loads`` of an 8 MB body is one C call of 100 to 250 ms: while a
worker thread runs it, the event loop cannot answer anything. A body shaped
``{..., "items": [{...}, {...}, ...]}`` (``items`` the last key, as every
client writes it) is parsed as its head (``{..., "items": []}``) plus its
items in pieces of about :data:`PIECE_BYTES`, cut where one item ends and the
next begins (``}``, ``,``, ``{`` and JSON whitespace).

Guarantees:

- The result is ``orjson.loads(body)``'s: every byte of the body is parsed by
  orjson or matched as JSON whitespace or punctuation, the head is parsed
  whole (so the state at the items array is known), and a piece that parses
  starts where an item starts and ends where one ends (a cut inside a string
  or a nested object leaves a piece that does not parse, and one that closes
  the array early is seen). Pieces keep the nesting depth they have in the
  body (orjson's depth limit applies alike).
- Anything else (another shape, eight cuts in a row that do not parse, an
  invalid body) falls back to one ``orjson.loads(body)``: the same value, or
  the same error.
- Bounded: at most ``len(body) / PIECE_BYTES + 1`` pieces of at most eight
  tries each; the regular expressions have no nested quantifiers (linear).
- With ``max_items``, the parse stops at the first piece that brings the
  items past it (:class:`TooManyItems`): at most ``max_items`` plus one
  piece's items are ever built, however long the array.
- With ``reserve``, every parse (the head, each piece, or the whole body) is
  preceded by ``reserve(n)``, ``n`` = :func:`parsed_bytes_bound` of the bytes
  about to be parsed: the caller can refuse (raise) before the objects exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["PIECE_BYTES", "Reserve", "TooManyItems", "loads", "parsed_bytes_bound"]

PIECE_BYTES = 256 * 1024
"""Bytes orjson parses in one call here (about 2 ms); smaller bodies are parsed whole."""

_WS = b" \t\n\r"
_ITEMS = re.compile(rb'"items"[ \t\n\r]*:[ \t\n\r]*\[')
_CUT = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_TRIES = 8
"""Cuts tried for one piece (a ``},{`` inside a string does not parse) before parsing whole."""

Reserve = Callable[[int], None]
"""``reserve(n)``: n more bytes of parsed objects are about to exist (raise to refuse);
a negative ``n`` gives back what a dropped attempt had reserved."""

# What CPython 3.11 allocates per JSON token that orjson turns into objects, rounded
# up (tracemalloc over orjson.loads of one shape at a time; tests/engine/
# test_parse_bound.py holds every shape to the bound): a non-empty dict (184 bytes,
# growing with its keys: _ENTRY per ":"), an empty one, a list, one element's slot and
# value (a number, or a string's fixed part; its characters are at most its bytes).
_DICT, _EMPTY, _LIST, _ENTRY, _STRING = 200, 72, 64, 48, 56


_OTHER_BYTES = bytes(b for b in range(256) if b not in b'{}[],:"')
"""Every byte but those the bound counts (``bytes.translate`` deletes them in one pass)."""


def parsed_bytes_bound(body: bytes, start: int = 0, stop: int | None = None) -> int:
    """An upper bound on the bytes ``orjson.loads(body[start:stop])`` allocates.

    Counted from bytes only (no parse): containers, ``,`` and ``:`` (each at
    most one value and its slot) and ``"`` (a string per two), plus the bytes
    themselves (a string's characters). Brackets, commas or quotes inside
    strings count too, so the bound only errs high. One ``translate`` pass keeps
    only those bytes (whitespace gone: ``{ }`` counts as empty, as it is); the
    counts run on what is left.
    """
    end = len(body) if stop is None else stop
    part = body if start == 0 and end == len(body) else body[start:end]
    marks = part.translate(None, _OTHER_BYTES)
    dicts, empty = marks.count(b"{"), marks.count(b"{}")
    lists = marks.count(b"[")
    values = marks.count(b",") + marks.count(b":") + dicts + lists
    return (
        _DICT * (dicts - empty)
        + _EMPTY * empty
        + _LIST * lists
        + _ENTRY * values
        + _STRING * (marks.count(b'"') // 2 + 1)
        + (end - start)
    )


class TooManyItems(Exception):
    """The request's items pass ``max_items`` (``count``: those seen, ``exact``: all)."""

    def __init__(self, count: int, limit: int, *, exact: bool = True) -> None:
        self.count, self.limit, self.exact = count, limit, exact
        if exact:
            super().__init__(f"request has {count} items, more than the limit of {limit}")
        else:
            super().__init__(f"request has at least {count} items, more than the limit of {limit}")


def loads(body: bytes, max_items: int | None = None, reserve: Reserve | None = None) -> Any:
    """``orjson.loads(body)``, in pieces when the body is large and shaped as a request.

    ``max_items``: :class:`TooManyItems` as soon as the pieces hold more items.
    ``reserve``: asked before each parse (see the module's guarantees).
    """
    if len(body) > PIECE_BYTES:
        data = _loads_in_pieces(body, max_items, reserve)
        if data is not None:
            return data
    if reserve is not None:
        reserve(parsed_bytes_bound(body))
    return orjson.loads(body)


def _loads_in_pieces(
    body: bytes, max_items: int | None = None, reserve: Reserve | None = None
) -> dict[str, Any] | None:
    """The parsed request, or None when the body is not one this can cut.

    On None, what was reserved for pieces already parsed is given back (they are dropped).
    """
    found = _ITEMS.search(body)
    if found is None or (found.start() > 0 and body[found.start() - 1] == ord("\\")):
        return None
    opening = found.end() - 1  # the items array's "["
    end = len(body.rstrip(_WS))  # the top-level object's "}" is body[end - 1]
    closing = body.rfind(b"]", opening + 1, max(end - 1, 0))
    if closing < 0 or body[end - 1] != ord("}") or body[closing + 1 : end - 1].strip(_WS):
        return None
    tally = _Tally(reserve)
    tally.reserve(parsed_bytes_bound(body, 0, opening))
    try:
        head = orjson.loads(body[:opening] + b"[]}")
    except orjson.JSONDecodeError:
        head = None
    if type(head) is not dict:
        tally.give_back()
        return None
    items: list[Any] = []
    start = opening + 1
    while start < closing:  # bounded: each turn moves start on by PIECE_BYTES or to the end
        piece = _piece(body, start, closing, tally)
        if piece is None:
            tally.give_back()
            return None
        start, part = piece
        items += part
        if max_items is not None and len(items) > max_items:
            raise TooManyItems(len(items), max_items, exact=start >= closing)
    head["items"] = items
    return head


class _Tally:
    """``reserve`` calls of one parse, summed (to give them back when the parse is dropped)."""

    def __init__(self, reserve: Reserve | None) -> None:
        self._reserve = reserve
        self.total = 0

    def reserve(self, nbytes: int) -> None:
        if self._reserve is not None:
            self._reserve(nbytes)
            self.total += nbytes

    def give_back(self, nbytes: int | None = None) -> None:
        """Return ``nbytes`` (all, when None) of what was reserved."""
        amount = self.total if nbytes is None else nbytes
        if self._reserve is not None and amount:
            self._reserve(-amount)
            self.total -= amount


def _piece(body: bytes, start: int, closing: int, tally: _Tally) -> tuple[int, list[Any]] | None:
    """``(next start, items)`` up to a cut at least PIECE_BYTES on, or to the array's end.

    None when none of the next ``_TRIES`` cuts gives a piece that parses.
    """
    after = start + PIECE_BYTES
    for _ in range(_TRIES):  # bounded: _TRIES cuts
        cut = _CUT.search(body, after, closing)
        stop = closing if cut is None else cut.start() + 1
        bound = parsed_bytes_bound(body, start, stop)
        tally.reserve(bound)
        try:
            # [[piece]]: each item sits as deep as in the body; one element only
            # if the piece does not close the items array early ("}],[{").
            wrapped = orjson.loads(b"[[" + body[start:stop] + b"]]")
        except orjson.JSONDecodeError:
            wrapped = None
        if wrapped is not None and len(wrapped) == 1:
            return (closing if cut is None else cut.end() - 1), wrapped[0]
        tally.give_back(bound)  # nothing of this try is kept
        if cut is None:
            return None
        after = cut.start() + 1  # that cut was inside a string or an object: the next one
    return None
