"""Latency profiles of the benchmark stubs: how long a simulated call takes.

A profile (``bench_profile`` param, as the public engines' benchmark configs
write it) is ``{"p50": [mean, max], "p99": [mean, max], "type": "io"|"cpu",
"iterations": n}`` in milliseconds. Each call draws a jitter ``u`` in [0, 1),
places p50 and p99 between their mean and max, and samples a log-normal
duration with that median and 99th percentile, capped at 1.5 x p99. An
``io`` stub sleeps that long; a ``cpu`` stub computes that long (the Go
stubs' ``iterations`` count is calibrated to Go's loop speed, so here it is
read but the sampled duration is what is honoured).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..._context import Context

__all__ = ["LatencyProfile", "LatencySampler", "parse_bench_profile"]

_Z99 = 2.326
"""The standard normal's 99th percentile."""

_CPU_SLICE = 256
"""Arithmetic rounds between two clock reads while computing."""


@dataclass(frozen=True)
class LatencyProfile:
    """Milliseconds: p50 and p99 each as (mean, max); ``io`` sleeps, else computes."""

    p50_mean: float
    p50_max: float
    p99_mean: float
    p99_max: float
    io: bool
    iterations: int = 0


class LatencySampler:
    """Draws durations from a :class:`LatencyProfile` and spends them.

    ``rng``: a ``random.Random`` (seed it for a reproducible sequence); the
    default one is shared by every sampler (``random.Random`` is thread-safe).
    """

    def __init__(self, profile: LatencyProfile, rng: random.Random | None = None) -> None:
        self.profile = profile
        self._rng = rng if rng is not None else _SHARED

    @property
    def cap_ms(self) -> float:
        """The longest duration :meth:`sample_ms` can return."""
        p = self.profile
        p50 = max(p.p50_mean, p.p50_max, 0.001)
        return 1.5 * max(p.p99_mean, p.p99_max, 2 * p50)

    def sample_ms(self) -> float:
        """One duration in milliseconds (0 when the profile's p50 is not positive)."""
        p = self.profile
        if p.p50_mean <= 0:
            return 0.0
        u = self._rng.random()
        p50 = max(p.p50_mean + u * (p.p50_max - p.p50_mean), 0.001)
        p99 = p.p99_mean + u * (p.p99_max - p.p99_mean)
        if p99 <= p50:
            p99 = 2 * p50
        mu = math.log(p50)
        sigma = (math.log(p99) - mu) / _Z99
        if sigma <= 0:
            sigma = 0.1
        sample = math.exp(mu + sigma * self._rng.gauss(0.0, 1.0))
        return min(max(sample, 0.0), 1.5 * p99)

    def apply(self, ctx: Context, operator: str) -> float:
        """Sleep or compute for one sampled duration; returns the milliseconds spent.

        Bounded by the sample (at most :attr:`cap_ms`) and by ``ctx``'s
        deadline: past it, raises :class:`~pineapple.DeadlineExceededError`
        naming ``operator``.
        """
        ms = self.sample_ms()
        if ms <= 0:
            return 0.0
        start = time.monotonic()
        end = start + ms / 1000.0
        remaining = ctx.remaining()
        if remaining is not None:
            end = min(end, start + remaining)
        if self.profile.io:
            time.sleep(max(0.0, end - start))
        else:
            _compute_until(end)
        ctx.check_deadline(operator)
        return (time.monotonic() - start) * 1000.0


def _compute_until(end: float) -> float:
    """Floating-point busy work until the monotonic clock reaches ``end``."""
    acc = 1.0
    x = 1.0
    # Bounded by ``end``: the clock is read every _CPU_SLICE rounds.
    while time.monotonic() < end:
        for _ in range(_CPU_SLICE):
            x = x * 1.000001 + 0.5
            acc += x / (x + 1.0)
            acc -= x / (x + 2.0)
    return acc


_SHARED = random.Random()


def _number(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def parse_bench_profile(raw: Any, rng: random.Random | None = None) -> LatencySampler | None:
    """The sampler of a ``bench_profile`` param, or None when it asks for no latency.

    As the Go stubs: anything that is not an object, or whose p50 and p99
    means are both not positive, means no latency; malformed fields read as 0.
    """
    if not isinstance(raw, Mapping):
        return None
    p50 = raw.get("p50")
    p99 = raw.get("p99")
    p50_pair = (
        (_number(p50[0]), _number(p50[1])) if isinstance(p50, list) and len(p50) >= 2 else (0, 0)
    )
    p99_pair = (
        (_number(p99[0]), _number(p99[1])) if isinstance(p99, list) and len(p99) >= 2 else (0, 0)
    )
    profile = LatencyProfile(
        p50_mean=p50_pair[0],
        p50_max=p50_pair[1],
        p99_mean=p99_pair[0],
        p99_max=p99_pair[1],
        io=raw.get("type") == "io",
        iterations=int(_number(raw.get("iterations"))),
    )
    if profile.p50_mean <= 0 and profile.p99_mean <= 0:
        return None
    return LatencySampler(profile, rng)
