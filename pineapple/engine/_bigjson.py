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
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["PIECE_BYTES", "loads"]

PIECE_BYTES = 256 * 1024
"""Bytes orjson parses in one call here (about 2 ms); smaller bodies are parsed whole."""

_WS = b" \t\n\r"
_ITEMS = re.compile(rb'"items"[ \t\n\r]*:[ \t\n\r]*\[')
_CUT = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_TRIES = 8
"""Cuts tried for one piece (a ``},{`` inside a string does not parse) before parsing whole."""


def loads(body: bytes) -> Any:
    """``orjson.loads(body)``, in pieces when the body is large and shaped as a request."""
    if len(body) > PIECE_BYTES:
        data = _loads_in_pieces(body)
        if data is not None:
            return data
    return orjson.loads(body)


def _loads_in_pieces(body: bytes) -> dict[str, Any] | None:
    """The parsed request, or None when the body is not one this can cut."""
    found = _ITEMS.search(body)
    if found is None or (found.start() > 0 and body[found.start() - 1] == ord("\\")):
        return None
    opening = found.end() - 1  # the items array's "["
    end = len(body.rstrip(_WS))  # the top-level object's "}" is body[end - 1]
    closing = body.rfind(b"]", opening + 1, max(end - 1, 0))
    if closing < 0 or body[end - 1] != ord("}") or body[closing + 1 : end - 1].strip(_WS):
        return None
    try:
        head = orjson.loads(body[:opening] + b"[]}")
        if type(head) is not dict:
            return None
    except orjson.JSONDecodeError:
        return None
    items: list[Any] = []
    start = opening + 1
    while start < closing:  # bounded: each turn moves start on by PIECE_BYTES or to the end
        piece = _piece(body, start, closing)
        if piece is None:
            return None
        start, part = piece
        items += part
    head["items"] = items
    return head


def _piece(body: bytes, start: int, closing: int) -> tuple[int, list[Any]] | None:
    """``(next start, items)`` up to a cut at least PIECE_BYTES on, or to the array's end.

    None when none of the next ``_TRIES`` cuts gives a piece that parses.
    """
    after = start + PIECE_BYTES
    for _ in range(_TRIES):  # bounded: _TRIES cuts
        cut = _CUT.search(body, after, closing)
        stop = closing if cut is None else cut.start() + 1
        try:
            # [[piece]]: each item sits as deep as in the body; one element only
            # if the piece does not close the items array early ("}],[{").
            wrapped = orjson.loads(b"[[" + body[start:stop] + b"]]")
        except orjson.JSONDecodeError:
            wrapped = None
        if wrapped is not None and len(wrapped) == 1:
            return (closing if cut is None else cut.end() - 1), wrapped[0]
        if cut is None:
            return None
        after = cut.start() + 1  # that cut was inside a string or an object: the next one
    return None
