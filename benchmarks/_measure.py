"""Side-by-side measurement: interleaved rounds, medians, and the result rows."""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GENERATOR_CPU_SHARE",
    "MIN_HELD_RATE",
    "SATURATED_P99_FACTOR",
    "SATURATED_P99_FLOOR_SECONDS",
    "Result",
    "interleaved",
    "interleaved_stmts",
    "invalid_closed_loop",
    "invalid_open_loop",
    "median",
    "paired",
]

MIN_HELD_RATE = 0.9
"""An open-loop run whose load generator completed less than this share of the
requested rate did not measure the rate it claims: INVALID."""
GENERATOR_CPU_SHARE = 0.9
"""A load generator that used this share of a core or more may itself be the
bottleneck: INVALID."""
SATURATED_P99_FACTOR = 25.0
SATURATED_P99_FLOOR_SECONDS = 0.05
"""A steady (reference) p99 above both ``SATURATED_P99_FACTOR`` times the
unloaded service time and this floor means the reference side is itself
saturated (a queue, not a service time): a ratio against it says nothing."""


@dataclass(frozen=True)
class Result:
    """One target: the measured ratio against its limit, with the raw figures."""

    number: int
    name: str
    ratio: float | None
    limit: float
    detail: str
    invalid: str | None = None
    """Why the measurement cannot be judged (its conditions did not hold), or None."""

    @property
    def verdict(self) -> str:
        """PASS/FAIL against the limit; INVALID (with a reason) before either; n/a unmeasured."""
        if self.invalid:
            return "INVALID"
        if self.ratio is None:
            return "n/a"
        return "PASS" if self.ratio <= self.limit else "FAIL"


def invalid_open_loop(
    *,
    requested_rate: float,
    completed: int,
    seconds: float,
    generator_cpu_seconds: float,
    steady_p99: float | None = None,
    unloaded: float | None = None,
) -> str | None:
    """Why an open-loop (fixed-rate) run is not a valid measurement, or None.

    INVALID when the generator completed under ``MIN_HELD_RATE`` of the
    requested rate, when it used ``GENERATOR_CPU_SHARE`` of a core or more,
    or when the steady p99 is saturated against the ``unloaded`` service time
    (see ``SATURATED_P99_FACTOR``).
    """
    achieved = completed / seconds if seconds > 0 else 0.0
    if achieved < MIN_HELD_RATE * requested_rate:
        return (
            f"load generator held {achieved:,.0f} of {requested_rate:,.0f} req/s requested "
            f"(< {MIN_HELD_RATE:.0%})"
        )
    reason = invalid_closed_loop(generator_cpu_seconds=generator_cpu_seconds, seconds=seconds)
    if reason:
        return reason
    if steady_p99 is not None and unloaded is not None:
        bound = max(SATURATED_P99_FACTOR * unloaded, SATURATED_P99_FLOOR_SECONDS)
        if steady_p99 > bound:
            return (
                f"steady p99 {steady_p99 * 1e3:,.1f} ms is itself saturated (above "
                f"{bound * 1e3:,.1f} ms = max({SATURATED_P99_FACTOR:g}x the unloaded "
                f"{unloaded * 1e3:.2f} ms, {SATURATED_P99_FLOOR_SECONDS * 1e3:.0f} ms))"
            )
    return None


def invalid_closed_loop(*, generator_cpu_seconds: float, seconds: float) -> str | None:
    """Why a closed-loop (as fast as answered) run is not valid, or None: the
    generator used ``GENERATOR_CPU_SHARE`` of a core or more, so it may be what
    limited the count."""
    share = generator_cpu_seconds / seconds if seconds > 0 else 1.0
    if share >= GENERATOR_CPU_SHARE:
        return (
            f"load generator used {share:.0%} of a core (>= {GENERATOR_CPU_SHARE:.0%}): "
            "it may be the bottleneck"
        )
    return None


def median(values: list[float]) -> float:
    return statistics.median(values)


def interleaved_stmts(
    stmts: Mapping[str, str],
    namespace: Mapping[str, Any],
    *,
    number: int = 100_000,
    rounds: int = 15,
) -> dict[str, float]:
    """Median seconds per execution of each statement, rounds interleaved.

    Each round times every statement once (``number`` executions in a tight
    timeit loop), in rotating order, so drift on the machine hits all alike.
    """
    timers = {name: timeit.Timer(stmt, globals=dict(namespace)) for name, stmt in stmts.items()}
    samples: dict[str, list[float]] = {name: [] for name in stmts}
    names = list(stmts)
    for timer in timers.values():  # warm-up
        timer.timeit(number // 10 or 1)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            samples[name].append(timers[name].timeit(number) / number)
    return {name: median(values) for name, values in samples.items()}


def interleaved(
    fns: Mapping[str, Callable[[], object]], *, rounds: int = 15, number: int = 1
) -> dict[str, float]:
    """Median seconds per call of each function, rounds interleaved."""
    return interleaved_stmts(
        {name: f"_fns[{name!r}]()" for name in fns}, {"_fns": fns}, number=number, rounds=rounds
    )


def paired(
    fns: Mapping[str, Callable[[], object]], *, rounds: int = 200, number: int = 200
) -> tuple[dict[str, float], dict[str, float]]:
    """CPU seconds per call of each function (median), and each one's median
    per-round ratio to the first one.

    Each round runs every function ``number`` times, in rotating order, and
    reads the process CPU clock around each batch; the ratio of two batches
    of one round cancels the drift that other processes cause between
    rounds (what a small cost bound of a few percent needs on a busy machine).
    Bounded: ``rounds * len(fns)`` batches.
    """
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    clock = time.process_time
    for fn in fns.values():  # warm-up
        for _ in range(number):
            fn()
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn = fns[name]
            started = clock()
            for _ in range(number):
                fn()
            samples[name].append(clock() - started)
    first = samples[names[0]]
    per_call = {name: median(v) / number for name, v in samples.items()}
    ratios = {
        name: median([a / b for a, b in zip(v, first, strict=True) if b > 0])
        for name, v in samples.items()
    }
    return per_call, ratios
