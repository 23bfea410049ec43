"""Errors raised by the built-in resource types (beyond ``pineapple.ConfigError``)."""

from __future__ import annotations

from pineapple import PineappleError
from pineapple.resource.lowlevel import redact

__all__ = ["ERROR_CHARS", "SourceError", "error_text", "timeout_text"]

ERROR_CHARS = 2000
"""Longest error text of a failed load (the loader child sends at most this much)."""


class SourceError(PineappleError):
    """A resource's source (database, Redis server, file) could not be read.

    Raised by fetchers; the Manager keeps the previous value and records the
    (redacted) message in status. Messages name the source without secrets.
    """


def error_text(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """``Type: message`` of ``exc``, ``secrets`` masked, at most ``ERROR_CHARS`` long."""
    return capped(redact(f"{type(exc).__name__}: {exc}", secrets))


def capped(text: str) -> str:
    """``text`` cut to ``ERROR_CHARS``, saying how much was left off."""
    if len(text) <= ERROR_CHARS:
        return text
    return text[: ERROR_CHARS - 30] + f"... ({len(text) - ERROR_CHARS + 30} more characters)"


def timeout_text(read_timeout: float) -> str:
    """What a read that waited ``read_timeout`` seconds for the server in vain says."""
    return f"query timed out: no data from the server for {read_timeout:g}s (read_timeout_ms)"
