"""Reachability metrics of probed resource values (``pine_<kind>_up`` and its ping latency).

Read at scrape time from the serving snapshot's Manager, as the other
per-resource gauges are: every value that reports probes (see
``pineapple.resource.lowlevel.Probed``; today ``redis_connection``) yields, with Go's
family and label names, ``pine_<kind>_up{name}`` (1/0 by the last probe;
absent until one has finished) and the histogram
``pine_<kind>_ping_duration_seconds{name}``. ``name`` is the value's
``metrics_name`` label, else the resource name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from pineapple import resource
from pineapple.resource.lowlevel import LATENCY_BUCKETS, probe_report_of

__all__ = ["labelled_reports", "probe_families"]


class _Labelled(Protocol):
    @property
    def label(self) -> str: ...


_R = TypeVar("_R", bound=_Labelled)


def labelled_reports(
    manager: resource.Manager, report_of: Callable[[Any], _R | None]
) -> Iterator[tuple[str, _R]]:
    """``(name label, report)`` of every value of ``manager`` that ``report_of`` reads a
    report from (the label: the report's own, else the resource name). No I/O."""
    for name in manager.names():  # bounded: the manager's resources
        handle = manager.get(name)
        if handle is None:
            continue
        with handle as value:
            report = report_of(value)
        if report is not None:
            yield report.label or name, report


def probe_families(manager: resource.Manager) -> list[Metric]:
    """The ``up`` gauge and ping histogram of every probed value, grouped per kind."""
    families: dict[str, tuple[GaugeMetricFamily, HistogramMetricFamily]] = {}
    for label, report in labelled_reports(manager, probe_report_of):
        pair = families.get(report.kind)
        if pair is None:
            kind = report.kind
            pair = families[kind] = (
                GaugeMetricFamily(
                    f"pine_{kind}_up",
                    f"Whether the last {kind} PING probe succeeded (1) or failed (0).",
                    labels=["name"],
                ),
                HistogramMetricFamily(
                    f"pine_{kind}_ping_duration_seconds",
                    f"{kind} PING probe latency in seconds.",
                    labels=["name"],
                ),
            )
        up, ping = pair
        if report.up is not None:
            up.add_metric([label], 1.0 if report.up else 0.0)
        buckets = [
            (str(float(bound)), float(n))
            for bound, n in zip(LATENCY_BUCKETS, report.bucket_counts, strict=True)
        ]
        buckets.append(("+Inf", float(report.count)))
        ping.add_metric([label], buckets, report.sum_seconds)
    return [metric for pair in families.values() for metric in pair]
