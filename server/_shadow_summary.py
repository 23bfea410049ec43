"""What a staged candidate's shadow found, and the thresholds that decide it.

:class:`ShadowSummary` adds up :class:`~server._shadow_compare.Difference` s:
counts (requests compared, same, changed, errors, both failed, dropped,
items added, removed, moved, with fields changed), each side's latency in a
fixed histogram (``LATENCY_BOUNDS``: log-spaced from 50 us to 60 s, so
summaries of several workers add up exactly and a p99 is read from the
buckets), and the first ``max_examples`` differing requests
(``--shadow-examples``). :meth:`ShadowSummary.counts` / :meth:`merge` carry a
worker's summary to its supervisor, which adds them into the pod's one.

:class:`Thresholds` are what a stage names for its automatic decision
(``min_requests``, ``max_error_ratio``, ``max_changed_ratio``,
``max_p99_growth``): once ``min_requests`` requests are compared,
:meth:`Thresholds.verdict` promotes when every ratio is within its
threshold, else aborts naming the first one passed. With no
``min_requests`` nothing is decided automatically.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._shadow_compare import Difference

__all__ = [
    "COUNTS",
    "LATENCY_BOUNDS",
    "Decision",
    "ShadowSummary",
    "ThresholdError",
    "Thresholds",
]

Decision = Literal["promote", "abort"]

LATENCY_BOUNDS: tuple[float, ...] = tuple(5e-5 * 1.25**i for i in range(63))
"""Upper bounds (seconds) of the latency buckets: 50 us x 1.25^i up to about 60 s."""

COUNTS = (
    "requests",
    "same",
    "changed",
    "errors",
    "both_failed",
    "dropped",
    "items_added",
    "items_removed",
    "items_moved",
    "items_fields_changed",
    "common_changed",
)
"""The counters of a summary, in the order :meth:`ShadowSummary.counts` sends them."""


class ShadowSummary:
    """The counts, latencies and first examples of one stage (not thread-safe: the
    shadow's one thread writes it, readers hold the shadow's lock)."""

    def __init__(self, max_examples: int) -> None:
        self.max_examples = max(0, max_examples)
        self.count = dict.fromkeys(COUNTS, 0)
        size = len(LATENCY_BOUNDS) + 1
        self.live_latency = [0] * size
        self.candidate_latency = [0] * size
        self.examples: list[dict[str, Any]] = []

    def add(self, diff: Difference, live_seconds: float, candidate_seconds: float) -> None:
        """Count one compared request."""
        count = self.count
        count["requests"] += 1
        key = "errors" if diff.outcome == "error" else diff.outcome
        count[key] += 1
        count["items_added"] += diff.added
        count["items_removed"] += diff.removed
        count["items_moved"] += diff.moved
        count["items_fields_changed"] += diff.fields
        count["common_changed"] += int(diff.common)
        self.live_latency[bisect.bisect_left(LATENCY_BOUNDS, live_seconds)] += 1
        self.candidate_latency[bisect.bisect_left(LATENCY_BOUNDS, candidate_seconds)] += 1
        if diff.outcome in ("changed", "error") and len(self.examples) < self.max_examples:
            self.examples.append(diff.to_dict())

    def counts(self) -> dict[str, Any]:
        """What a worker sends its supervisor (:meth:`merge` reads it)."""
        return {
            "count": dict(self.count),
            "live_latency": list(self.live_latency),
            "candidate_latency": list(self.candidate_latency),
            "examples": list(self.examples),
        }

    def merge(self, counts: Mapping[str, Any]) -> None:
        """Add a worker's :meth:`counts`; ``ValueError`` when they are not such counts."""
        count, live, cand = (
            counts.get("count"),
            counts.get("live_latency"),
            counts.get("candidate_latency"),
        )
        size = len(self.live_latency)
        if not (
            isinstance(count, dict)
            and all(isinstance(count.get(k, 0), int) for k in COUNTS)
            and isinstance(live, list)
            and isinstance(cand, list)
            and len(live) == len(cand) == size
            and all(isinstance(n, int) for n in (*live, *cand))
        ):
            raise ValueError("shadow counts are {count, live_latency, candidate_latency}")
        for key in COUNTS:
            self.count[key] += int(count.get(key, 0))
        for i in range(size):  # bounded: the fixed buckets
            self.live_latency[i] += live[i]
            self.candidate_latency[i] += cand[i]
        examples = counts.get("examples")
        if isinstance(examples, list):
            room = max(0, self.max_examples - len(self.examples))
            self.examples.extend(e for e in examples[:room] if isinstance(e, dict))

    def ratios(self) -> dict[str, float | None]:
        """Changed and error ratios, each side's p50/p99 and the p99's growth (None: no data)."""
        n = self.count["requests"]
        live99 = _quantile(self.live_latency, 0.99)
        cand99 = _quantile(self.candidate_latency, 0.99)
        growth = None
        if live99 is not None and cand99 is not None and live99 > 0:
            growth = round(cand99 / live99 - 1.0, 6)
        return {
            "changed_ratio": round(self.count["changed"] / n, 6) if n else None,
            "error_ratio": round(self.count["errors"] / n, 6) if n else None,
            "live_p50_seconds": _quantile(self.live_latency, 0.5),
            "live_p99_seconds": live99,
            "candidate_p50_seconds": _quantile(self.candidate_latency, 0.5),
            "candidate_p99_seconds": cand99,
            "p99_growth": growth,
        }

    def to_dict(self) -> dict[str, Any]:
        """The summary of ``GET /config/candidate``."""
        return {**self.count, **self.ratios(), "examples": list(self.examples)}


def _quantile(buckets: list[int], q: float) -> float | None:
    """The upper bound of the bucket holding quantile ``q`` (None: nothing counted)."""
    total = sum(buckets)
    if not total:
        return None
    rank = math.ceil(q * total)
    seen = 0
    for i, n in enumerate(buckets):  # bounded: the fixed buckets
        seen += n
        if seen >= rank:
            return round(LATENCY_BOUNDS[min(i, len(LATENCY_BOUNDS) - 1)], 6)
    return None  # not reached: seen ends at total >= rank


class ThresholdError(ValueError):
    """A stage's threshold is not a number in its range (the message names it)."""


@dataclass(frozen=True)
class Thresholds:
    """A stage's automatic decision (see module docs); None fields: not checked."""

    min_requests: int | None = None
    max_error_ratio: float | None = None
    max_changed_ratio: float | None = None
    max_p99_growth: float | None = None

    @classmethod
    def parse(cls, given: Mapping[str, Any]) -> Thresholds:
        """From a query's or a JSON body's values (strings or numbers); unknown keys are
        not read. :class:`ThresholdError` naming a bad one."""
        return cls(
            min_requests=_number(given, "min_requests", int, 1.0),
            max_error_ratio=_number(given, "max_error_ratio", float, 0.0),
            max_changed_ratio=_number(given, "max_changed_ratio", float, 0.0),
            max_p99_growth=_number(given, "max_p99_growth", float, -1.0),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_requests": self.min_requests,
            "max_error_ratio": self.max_error_ratio,
            "max_changed_ratio": self.max_changed_ratio,
            "max_p99_growth": self.max_p99_growth,
        }

    def verdict(self, summary: ShadowSummary) -> tuple[Decision, str] | None:
        """``("promote"|"abort", reason)`` once ``min_requests`` are compared; else None."""
        n = summary.count["requests"]
        if self.min_requests is None or n < self.min_requests:
            return None
        ratios = summary.ratios()
        for name, key in (
            ("max_error_ratio", "error_ratio"),
            ("max_changed_ratio", "changed_ratio"),
            ("max_p99_growth", "p99_growth"),
        ):
            limit, value = getattr(self, name), ratios[key]
            if limit is not None and value is not None and value > limit:
                return "abort", f"{key} {value:g} is above {name} {limit:g} after {n} requests"
        return "promote", f"within every threshold after {n} requests"


def _number(given: Mapping[str, Any], name: str, kind: type, low: float) -> Any:
    raw = given.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ThresholdError(f"{name} must be a number, not {str(raw)[:64]!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ThresholdError(f"{name} must be finite")
    if value < low or (kind is int and value > 1 << 31):
        raise ThresholdError(f"{name} must be at least {low:g}")
    return value
