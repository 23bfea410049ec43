"""The refresh interval's range: 0 (the type's default), -1 (never), or 1 s .. 30 days.

One place decides which intervals are accepted, for config entries
(``resource_config``) and for resources registered by code
(``Manager.register``). Outside the range a refresh timer either floods the
refresh pool (an interval of 1e-300 s makes tens of thousands of fetches a
second) or cannot be waited for at all (above ~9.2e9 s a thread wait
overflows), so both are refused before anything runs.
"""

from __future__ import annotations

import math
from datetime import timedelta

from .._errors import ConfigError

__all__ = ["MAX_INTERVAL", "MIN_INTERVAL", "check_interval"]

MIN_INTERVAL = 1.0
"""The shortest refresh interval a config may ask for, in seconds."""

MAX_INTERVAL = float(timedelta(days=30).total_seconds())
"""The longest refresh interval, in seconds (30 days); -1 means never."""


def check_interval(name: str, seconds: float, *, minimum: float = MIN_INTERVAL) -> float:
    """``seconds`` as a float when it is 0, -1 or within ``minimum`` .. 30 days.

    Otherwise :class:`pineapple.ConfigError` naming the resource and the
    param. ``minimum`` may be lowered by code (``Manager(min_interval=...)``),
    never by a config.
    """
    value = float(seconds)
    if value in (0.0, -1.0):
        return value
    if math.isfinite(value) and minimum <= value <= MAX_INTERVAL:
        return value
    raise ConfigError(
        f"resource {name!r}: interval must be 0 (the type's default), -1 (never) "
        f"or between {minimum:g} and {MAX_INTERVAL:g} seconds (30 days), got {value:g}"
    )
