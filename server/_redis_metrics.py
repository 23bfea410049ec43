"""Go's per-client Redis families: pool gauges and per-command counts and latencies.

Read at scrape time from the serving snapshot's Manager, as the probe
families are (``server/_probe_metrics.py``): for every ``redis_connection``
value, with Go's names and labels,

- ``pine_redis_pool_total_conns{name}`` and ``pine_redis_pool_idle_conns{name}``
  (gauges: the pool's connections now, idle + in use, and idle);
- ``pine_redis_command_total{name,command,status}`` (counter) and
  ``pine_redis_command_duration_seconds{name,command,status}`` (histogram,
  Prometheus' default buckets as Go's), from the client's
  :class:`resources.CommandStats` (``status``: ok, timeout, pool_timeout, error).

``name`` is the resource's ``metrics_name``, else the resource name; values
sharing a name are summed. Counts live on the client: a config change that
replaces the client starts them again from zero (a counter reset, which
Prometheus' ``rate`` handles); an unchanged entry keeps its client across reloads.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

import resources
from pineapple import resource

__all__ = ["redis_families"]


def _clients(
    manager: resource.Manager,
) -> Iterator[tuple[str, tuple[int, int], list[resources.CommandCell]]]:
    for name in manager.names():  # bounded: the manager's resources
        handle = manager.get(name)
        if handle is None:
            continue
        with handle as value:
            if isinstance(value, resources.RedisConnection):
                label = value.reachability.label or name
                yield label, value.pool_counts(), value.command_stats.report()


def redis_families(manager: resource.Manager) -> list[Metric]:
    """The four families over every Redis client of ``manager`` (empty families when none)."""
    pools: dict[str, list[int]] = {}
    cells: dict[tuple[str, str, str], list[float]] = {}
    for label, (total, idle), report in _clients(manager):
        pool = pools.setdefault(label, [0, 0])
        pool[0] += total
        pool[1] += idle
        for cell in report:  # bounded: see CommandStats
            acc = cells.setdefault(
                (label, cell.command, cell.status), [0.0] * (len(cell.buckets) + 2)
            )
            acc[0] += cell.count
            acc[1] += cell.sum_seconds
            for i, n in enumerate(cell.buckets):  # bounded: fixed bucket count
                acc[2 + i] += n
    total_conns = GaugeMetricFamily(
        "pine_redis_pool_total_conns",
        "Total Redis connections in the pool (idle + in-use).",
        labels=["name"],
    )
    idle_conns = GaugeMetricFamily(
        "pine_redis_pool_idle_conns", "Idle Redis connections in the pool.", labels=["name"]
    )
    for label, (total, idle) in sorted(pools.items()):
        total_conns.add_metric([label], total)
        idle_conns.add_metric([label], idle)
    labels = ["name", "command", "status"]
    durations = HistogramMetricFamily(
        "pine_redis_command_duration_seconds",
        "Redis command latency in seconds, labelled by command name and outcome.",
        labels=labels,
    )
    counts = CounterMetricFamily(
        "pine_redis_command",
        "Cumulative count of Redis command invocations, labelled by command name and outcome.",
        labels=labels,
    )
    for key, acc in sorted(cells.items()):
        counts.add_metric(list(key), acc[0])
        durations.add_metric(list(key), _cumulative(acc[2:]), acc[1])
    return [total_conns, idle_conns, durations, counts]


def _cumulative(per_bucket: list[float]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    running = 0.0
    for bound, n in zip(
        (*resource.LATENCY_BUCKETS, float("inf")), per_bucket, strict=True
    ):  # bounded: fixed bucket count
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out
