"""Parsing JSON text that must hold an object (a config, a request, an answer).

:func:`loads_object` is the one parse-and-check every such reader shares; it
raises :class:`JSONObjectError`, whose message says what was wrong, and the
caller wraps it in its own named error with the file, request or operator
it read (``config is not valid JSON: ...``).
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["JSONObjectError", "loads_object"]


class JSONObjectError(ValueError):
    """The text is not JSON (``not valid JSON: <reason>``) or not an object
    (``not a JSON object (got list)``)."""


def loads_object(data: bytes | str) -> dict[str, Any]:
    """Parse ``data`` and return it when it is a JSON object; else :class:`JSONObjectError`."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JSONObjectError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise JSONObjectError(f"not a JSON object (got {type(value).__name__})")
    return value
