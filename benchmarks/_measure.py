"""Side-by-side measurement: interleaved rounds, medians, and the result rows."""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Result", "interleaved", "interleaved_stmts", "median", "paired"]


@dataclass(frozen=True)
class Result:
    """One target: the measured ratio against its limit, with the raw figures."""

    number: int
    name: str
    ratio: float | None
    limit: float
    detail: str

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "n/a"
        return "PASS" if self.ratio <= self.limit else "FAIL"


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
