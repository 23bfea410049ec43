"""Reachability of a resource value that talks to a server: ``Reachability`` and ``ProbeReport``.

A value that holds connections (a Redis pool) cannot say at load time
whether its server answers without blocking the load on the network; the
public engines connect lazily and learn it from a periodic probe. Such a
value keeps a :class:`Reachability`, records every probe in it, and exposes
``probe_report()``. The runtime reads that report without I/O: the resource
status gets a ``Reachable`` condition, and the server exports
``pine_<kind>_up`` and ``pine_<kind>_ping_duration_seconds``.

Guarantees:
- The recorder holds its latest report as one frozen :class:`ProbeReport`;
  ``record`` builds the next one from it under the recorder's lock and swaps
  it in, so a report is one consistent view (last result, its time, the
  latency counts and their sum) even while a probe thread records
  concurrently; nothing under the lock does I/O or calls out.
- ``wait_for(n, timeout)`` returns once ``n`` probes have been recorded or
  after ``timeout`` seconds, whichever is first (a ``threading.Condition``
  notified by ``record``); it never waits unbounded.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

__all__ = ["LATENCY_BUCKETS", "ProbeReport", "Probed", "Reachability", "probe_report_of"]

LATENCY_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""Upper bounds (seconds) of the probe latency histogram (Prometheus' defaults, as Go's)."""


@dataclass(frozen=True)
class ProbeReport:
    """What the probes of one value have seen so far. No secrets.

    ``up``: result of the last probe (None: none has finished). ``kind`` names
    the metric family (``redis`` -> ``pine_redis_up``); ``label`` is the
    value's ``name`` label (empty: the runtime uses the resource name).
    ``bucket_counts[i]`` counts probes that took at most ``LATENCY_BUCKETS[i]``
    seconds (cumulative); ``count`` and ``sum_seconds`` cover every probe.
    """

    kind: str
    label: str
    up: bool | None
    checked_at: float | None
    message: str
    probes: int
    bucket_counts: tuple[int, ...]
    count: int
    sum_seconds: float


@runtime_checkable
class Probed(Protocol):
    """A resource value that reports reachability (see the module docs)."""

    def probe_report(self) -> ProbeReport:
        """The current report; cheap, no I/O."""
        ...


def probe_report_of(value: Any) -> ProbeReport | None:
    """``value.probe_report()`` when the value reports one, else None."""
    if isinstance(value, Probed):
        return value.probe_report()
    return None


class Reachability:
    """Thread-safe record of probe results for one value (see the module's Guarantees)."""

    def __init__(self, kind: str, label: str = "") -> None:
        self.kind = kind
        self.label = label
        self._cond = threading.Condition(threading.Lock())
        self._report = ProbeReport(
            kind=kind,
            label=label,
            up=None,
            checked_at=None,
            message="not probed yet",
            probes=0,
            bucket_counts=(0,) * len(LATENCY_BUCKETS),
            count=0,
            sum_seconds=0.0,
        )

    def record(self, ok: bool, seconds: float, message: str) -> None:
        """One probe finished: ``ok`` or not, after ``seconds``; ``message`` says why."""
        first = bisect.bisect_left(LATENCY_BUCKETS, seconds)
        with self._cond:
            last = self._report
            counts = last.bucket_counts  # cumulative: each bucket from ``first`` on counts it
            self._report = replace(
                last,
                up=ok,
                checked_at=time.time(),
                message=message,
                probes=last.probes + 1,
                bucket_counts=counts[:first] + tuple(n + 1 for n in counts[first:]),
                count=last.count + 1,
                sum_seconds=last.sum_seconds + seconds,
            )
            self._cond.notify_all()

    def report(self) -> ProbeReport:
        """A consistent snapshot of what was recorded, under ``kind`` and ``label`` as they
        are now (a value may set its label after creating its recorder)."""
        with self._cond:
            last = self._report
        return replace(last, kind=self.kind, label=self.label)

    def wait_for(self, probes: int, timeout: float) -> bool:
        """Wait until ``probes`` probes were recorded, at most ``timeout`` s; True if they were."""
        with self._cond:
            return self._cond.wait_for(lambda: self._report.probes >= probes, timeout)
