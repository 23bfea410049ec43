"""Errors raised by the built-in resource types (beyond ``pineapple.ConfigError``)."""

from __future__ import annotations

from pineapple import PineappleError

__all__ = ["SourceError"]


class SourceError(PineappleError):
    """A resource's source (database, Redis server, file) could not be read.

    Raised by fetchers; the Manager keeps the previous value and records the
    (redacted) message in status. Messages name the source without secrets.
    """
