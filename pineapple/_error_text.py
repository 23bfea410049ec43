"""How long an error text may be: one bound, and the one place that cuts.

An error's text travels: into logs, HTTP answers, ``GET /config``, and under
``--workers N`` into the store's manifest and over the control channel, each
of which has a size cap. So every text an error is made of is bounded where
it is made: :func:`capped` cuts a whole message to :data:`MAX_ERROR_BYTES`,
and :func:`clipped` cuts a value a message quotes from user input (a config
key, a type name) to :data:`MAX_QUOTED_BYTES`. Both say how much they cut.
"""

from __future__ import annotations

__all__ = ["MAX_ERROR_BYTES", "MAX_QUOTED_BYTES", "capped", "clipped"]

MAX_ERROR_BYTES = 4096
"""At most this many UTF-8 bytes of an error text reach a message (answers, logs, files)."""
MAX_QUOTED_BYTES = 256
"""At most this many UTF-8 bytes of a quoted user value (a name, a key) reach a message."""
_MARK_BYTES = 32
"""Room kept for the ``... (N more bytes)`` mark (N has at most 20 digits)."""


def capped(text: str, limit: int = MAX_ERROR_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, saying how much was cut.

    >>> capped("x" * 5000).endswith("... (936 more bytes)")
    True
    """
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    head = raw[: max(0, limit - _MARK_BYTES)].decode("utf-8", "ignore")
    return f"{head}... ({len(raw) - len(head.encode())} more bytes)"


def clipped(value: object, limit: int = MAX_QUOTED_BYTES) -> str:
    """``str(value)`` cut as :func:`capped` cuts, to quote user input in a message."""
    return capped(str(value), limit)
