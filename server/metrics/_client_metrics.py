"""Go's per-client families: pool gauges and per-command counts and latencies.

Read at scrape time from the serving snapshot's Manager, as the probe
families are (``server/metrics/_probe_metrics.py``): for every value that reports a
:class:`pineapple.resource.lowlevel.ClientReport` (``Metered``; the built-in
``redis_connection`` does), grouped by the report's ``kind``, with Go's
names and labels (``redis``:

- ``pine_redis_pool_total_conns{name}`` and ``pine_redis_pool_idle_conns{name}``
  (gauges: the pool's connections now, idle + in use, and idle);
- ``pine_redis_command_total{name,command,status}`` (counter) and
  ``pine_redis_command_duration_seconds{name,command,status}`` (histogram,
  Prometheus' default buckets as Go's; ``status``: ok, timeout, pool_timeout, error).

``name`` is the report's label, else the resource name; values sharing a
kind and a name are summed. Counts live on the client: a config change that
replaces the client starts them again from zero (a counter reset, which
Prometheus' ``rate`` handles); an unchanged entry keeps its client across reloads.
"""

from __future__ import annotations

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from pineapple import resource
from pineapple.resource.lowlevel import (
    LATENCY_BUCKETS,
    ClientReport,
    client_report_of,
)

from ._probe_metrics import labelled_reports

__all__ = ["client_families"]


class _Kind:
    """The sums of one kind's clients: per name, pool counts; per (name, command, status), cells."""

    def __init__(self) -> None:
        self.pools: dict[str, list[int]] = {}
        self.cells: dict[tuple[str, str, str], list[float]] = {}

    def add(self, label: str, report: ClientReport) -> None:
        pool = self.pools.setdefault(label, [0, 0])
        pool[0] += report.total_conns
        pool[1] += report.idle_conns
        for cell in report.commands:  # bounded: see CommandStats
            acc = self.cells.setdefault(
                (label, cell.command, cell.status), [0.0] * (len(cell.buckets) + 2)
            )
            acc[0] += cell.count
            acc[1] += cell.sum_seconds
            for i, n in enumerate(cell.buckets):  # bounded: fixed bucket count
                acc[2 + i] += n

    def families(self, kind: str) -> list[Metric]:
        title = kind.capitalize()
        total_conns = GaugeMetricFamily(
            f"pine_{kind}_pool_total_conns",
            f"Total {title} connections in the pool (idle + in-use).",
            labels=["name"],
        )
        idle_conns = GaugeMetricFamily(
            f"pine_{kind}_pool_idle_conns",
            f"Idle {title} connections in the pool.",
            labels=["name"],
        )
        for label, (total, idle) in sorted(self.pools.items()):
            total_conns.add_metric([label], total)
            idle_conns.add_metric([label], idle)
        labels = ["name", "command", "status"]
        durations = HistogramMetricFamily(
            f"pine_{kind}_command_duration_seconds",
            f"{title} command latency in seconds, labelled by command name and outcome.",
            labels=labels,
        )
        counts = CounterMetricFamily(
            f"pine_{kind}_command",
            f"Cumulative count of {title} command invocations, labelled by command name "
            "and outcome.",
            labels=labels,
        )
        for key, acc in sorted(self.cells.items()):
            counts.add_metric(list(key), acc[0])
            durations.add_metric(list(key), _cumulative(acc[2:]), acc[1])
        return [total_conns, idle_conns, durations, counts]


def client_families(manager: resource.Manager) -> list[Metric]:
    """The four families of each kind of client that ``manager`` holds (none: no families)."""
    kinds: dict[str, _Kind] = {}
    for label, report in labelled_reports(manager, client_report_of):
        kinds.setdefault(report.kind, _Kind()).add(label, report)
    return [family for kind, sums in sorted(kinds.items()) for family in sums.families(kind)]


def _cumulative(per_bucket: list[float]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    running = 0.0
    for bound, n in zip(
        (*LATENCY_BUCKETS, float("inf")), per_bucket, strict=True
    ):  # bounded: fixed bucket count
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out
