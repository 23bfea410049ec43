"""The Go engine's metric families (``pine_*``), so its Grafana dashboards work unchanged.

Names, types, help texts, label names and bucket bounds follow the Go server
(``pine-go/pkg/server``, ``internal/runtime/engine_metrics.go``,
``operators/lua``). Nothing here is called per operator: HTTP requests are
counted in plain dicts on the event loop, operator and run counters live in
each engine's :class:`pineapple.engine.EngineStats` and are read at scrape
time; a retired engine's counts are folded into running totals, so counters
never go backwards across reloads.

Guarantees:
- :class:`HttpStats` is written and read only on the event loop thread (every
  ``/execute`` and route handler records after answering, on the loop; the
  scrape runs there too), so its dicts need no lock.
- :class:`EngineTotals` is guarded by its lock: engines are tracked from the
  reloader's thread and folded/read by the scrape. An engine is folded once,
  after it is closed (its last request has ended, so its counts are final),
  and then dropped: the tracked list holds only engines still open.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from pineapple.engine import StatsTotals

from .._engine_extras import engine_stats, operator_stats
from ._served import Served

__all__ = ["KNOWN_PATHS", "EngineTotals", "GoCollector", "HttpStats", "status_bucket"]

HTTP_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_HTTP_NS = tuple(int(b * 1e9) for b in HTTP_BUCKETS)
KNOWN_PATHS = frozenset(
    {"/execute", "/health", "/healthz", "/readyz", "/stats", "/dag", "/config", "/metrics"}
)
"""Paths reported under their own label; any other is ``_other`` (as Go: low cardinality)."""


def status_bucket(code: int) -> str:
    """``2xx`` / ``3xx`` / ``4xx`` / ``5xx`` / ``other``, as the Go server labels statuses."""
    if code >= 500:
        return "5xx"
    if code >= 400:
        return "4xx"
    if code >= 300:
        return "3xx"
    if code >= 200:
        return "2xx"
    return "other"


@dataclass
class _Durations:
    count: int = 0
    sum_ns: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(_HTTP_NS) + 1))


class HttpStats:
    """Requests by (method, path, status bucket) and durations by (method, path)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = {}
        self.durations: dict[tuple[str, str], _Durations] = {}
        self._execute: dict[int, tuple[tuple[str, str, str], _Durations]] = {}
        """``POST /execute``'s keys and cell by status (bounded: the statuses it answers)."""

    def record_execute(self, status: int, seconds: float) -> None:
        """``record("POST", "/execute", status, seconds)``, its keys found by status."""
        series = self._execute.get(status)
        if series is None:
            self.record("POST", "/execute", status, seconds)
            key = ("POST", "/execute", status_bucket(status))
            self._execute[status] = key, self.durations[("POST", "/execute")]
            return
        key, cell = series
        self.requests[key] += 1
        ns = int(seconds * 1e9)
        cell.count += 1
        cell.sum_ns += ns
        cell.buckets[bisect_left(_HTTP_NS, ns)] += 1

    def record(self, method: str, path: str, status: int, seconds: float) -> None:
        """One answered request (on the event loop)."""
        if path not in KNOWN_PATHS:
            path = "_other"
        key = (method, path, status_bucket(status))
        self.requests[key] = self.requests.get(key, 0) + 1  # bounded: few methods x paths
        cell = self.durations.get((method, path))
        if cell is None:
            cell = self.durations[(method, path)] = _Durations()
        ns = int(seconds * 1e9)
        cell.count += 1
        cell.sum_ns += ns
        cell.buckets[bisect_left(_HTTP_NS, ns)] += 1

    def snapshot(self) -> dict[str, Any]:
        """The Go server's ``/stats`` ``http`` entry."""
        return {
            "requests_total": {" ".join(k): n for k, n in sorted(self.requests.items())},
            "request_duration_seconds": {
                " ".join(k): {"count": d.count, "sum_ns": d.sum_ns}
                for k, d in sorted(self.durations.items())
            },
        }


@dataclass
class _OpTotal:
    execs: int = 0
    skips: int = 0
    errors: int = 0
    sum: float = 0.0
    buckets: list[int] = field(default_factory=list)


class EngineTotals:
    """Engine counters summed over every engine this server has served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[Any] = []  # engines with ``stats`` and ``closed``
        self._ops: dict[str, _OpTotal] = {}
        self._runs = self._success = self._errors = 0
        self._dag_sum = self._executed_sum = 0.0
        self._dag_buckets: list[int] = []
        self._executed_buckets: list[int] = []

    def track(self, engine: object) -> None:
        """Count ``engine`` from now on (engines without ``stats`` are ignored)."""
        if engine_stats(engine) is not None:
            with self._lock:
                self._open.append(engine)

    def totals(self) -> EngineTotals:
        """A copy with every open engine's current counts added (closed ones folded first)."""
        out = EngineTotals()
        with self._lock:
            still: list[Any] = []
            for engine in self._open:  # bounded: engines not yet closed (a few)
                if engine.closed:
                    self._add(engine.stats.totals())
                else:
                    still.append(engine)
            self._open = still
            out._add_from(self)
            live = [engine.stats.totals() for engine in still]
        for totals in live:
            out._add(totals)
        return out

    def _add_from(self, other: EngineTotals) -> None:
        for name, op in other._ops.items():
            self._ops[name] = _OpTotal(op.execs, op.skips, op.errors, op.sum, list(op.buckets))
        self._runs, self._success, self._errors = other._runs, other._success, other._errors
        self._dag_sum, self._executed_sum = other._dag_sum, other._executed_sum
        self._dag_buckets = list(other._dag_buckets)
        self._executed_buckets = list(other._executed_buckets)

    def _add(self, t: StatsTotals) -> None:
        for name, op in t.operators.items():  # bounded: the engine's operators
            mine = self._ops.setdefault(name, _OpTotal(buckets=[0] * len(op.durations.counts)))
            mine.execs += op.exec_count
            mine.skips += op.skip_count
            mine.errors += op.error_count
            mine.sum += op.durations.sum
            _add(mine.buckets, op.durations.counts)
        self._runs += t.runs
        self._success += t.dag_success
        self._errors += t.dag_error
        self._dag_sum += t.dag_durations.sum
        self._executed_sum += t.executed.sum
        self._dag_buckets = _grow(self._dag_buckets, t.dag_durations.counts)
        self._executed_buckets = _grow(self._executed_buckets, t.executed.counts)

    def families(self, bounds: tuple[tuple[float, ...], ...]) -> Iterator[Metric]:
        """The engine families (``bounds``: operator, run, executed histogram bounds)."""
        op_bounds, dag_bounds, executed_bounds = bounds
        execs = CounterMetricFamily(
            "pine_operator_exec", "Total successful operator executions.", labels=["operator"]
        )
        skips = CounterMetricFamily(
            "pine_operator_skip", "Total skipped operator executions.", labels=["operator"]
        )
        errors = CounterMetricFamily(
            "pine_operator_error", "Total failed operator executions.", labels=["operator"]
        )
        durations = HistogramMetricFamily(
            "pine_operator_exec_duration_seconds",
            "Operator execution duration in seconds (sampled: one run in 64, at most 20 a second).",
            labels=["operator"],
        )
        for name, op in sorted(self._ops.items()):
            execs.add_metric([name], op.execs)
            skips.add_metric([name], op.skips)
            errors.add_metric([name], op.errors)
            durations.add_metric([name], _cumulative(op_bounds, op.buckets), op.sum)
        runs = CounterMetricFamily(
            "pine_scheduler_runs", "Total number of DAG scheduler runs.", value=self._runs
        )
        dag = CounterMetricFamily("pine_dag_executions", "Total DAG executions.", labels=["status"])
        dag.add_metric(["success"], self._success)
        dag.add_metric(["error"], self._errors)
        dag_durations = HistogramMetricFamily(
            "pine_dag_execution_duration_seconds",
            "DAG execution duration in seconds (sampled: one run in 64, at most 20 a second).",
            buckets=_cumulative(dag_bounds, self._dag_buckets),
            sum_value=self._dag_sum,
        )
        executed = HistogramMetricFamily(
            "pine_dag_operators_executed",
            "Number of operators executed (not skipped or cancelled) per DAG run.",
            buckets=_cumulative(executed_bounds, self._executed_buckets),
            sum_value=self._executed_sum,
        )
        yield from (execs, durations, skips, errors, runs, dag, dag_durations, executed)


def _add(mine: list[int], theirs: list[int]) -> None:
    for i, v in enumerate(theirs):  # bounded: fixed bucket count
        mine[i] += v


def _grow(mine: list[int], theirs: list[int]) -> list[int]:
    if not mine:
        return list(theirs)
    _add(mine, theirs)
    return mine


def _cumulative(bounds: tuple[float, ...], counts: list[int]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    running = 0
    counts = counts or [0] * (len(bounds) + 1)
    for bound, n in zip((*bounds, float("inf")), counts, strict=True):
        running += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
    return out


class GoCollector(Collector):
    """Yields the Go families at scrape time."""

    def __init__(
        self,
        current: Callable[[], Served | None],
        engines: EngineTotals,
        http: HttpStats,
    ) -> None:
        self._current = current
        self._engines = engines
        self._http = http

    def describe(self) -> Iterator[Metric]:
        return iter(())  # dynamic: not checked for duplicates at registration

    def collect(self) -> Iterator[Metric]:
        from pineapple.engine._stats import DAG_BUCKETS, EXECUTED_BUCKETS, OP_BUCKETS

        yield from self._http_families()
        bounds = (OP_BUCKETS, DAG_BUCKETS, tuple(float(b) for b in EXECUTED_BUCKETS))
        yield from self._engines.totals().families(bounds)
        active = GaugeMetricFamily(
            "pine_operator_active",
            "Number of operators currently executing (requests inside the engine).",
        )
        snap = self._current()
        active.add_metric([], max(0, snap.refs - 1) if snap is not None else 0)
        yield active
        yield from _lua_families(snap)

    def _http_families(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "pine_http_requests", "Total HTTP requests.", labels=["method", "path", "status"]
        )
        for key, n in sorted(self._http.requests.items()):
            requests.add_metric(list(key), n)
        durations = HistogramMetricFamily(
            "pine_http_request_duration_seconds",
            "HTTP request duration in seconds.",
            labels=["method", "path"],
        )
        for (method, path), d in sorted(self._http.durations.items()):
            durations.add_metric(
                [method, path], _cumulative(HTTP_BUCKETS, d.buckets), d.sum_ns / 1e9
            )
        yield from (requests, durations)


def _lua_families(snap: Served | None) -> Iterator[Metric]:
    labels = ["operator"]
    borrow = CounterMetricFamily("pine_lua_pool_borrow", "Total Lua state borrows.", labels=labels)
    give = CounterMetricFamily("pine_lua_pool_return", "Total Lua state returns.", labels=labels)
    create = CounterMetricFamily("pine_lua_pool_create", "Total Lua states created.", labels=labels)
    active = GaugeMetricFamily(
        "pine_lua_pool_active", "Lua states currently borrowed.", labels=labels
    )
    if snap is not None:
        for name, stats in sorted(operator_stats(snap.engine).items()):
            if "borrow_count" in stats:
                borrow.add_metric([name], stats["borrow_count"])
                give.add_metric([name], stats.get("return_count", 0))
                create.add_metric([name], stats.get("create_count", 0))
                active.add_metric([name], stats.get("active_count", 0))
    yield from (borrow, give, create, active)
