"""Prometheus metrics of one server, in a ``CollectorRegistry`` of its own.

Counters and histograms are updated where things happen (requests, reloads,
refreshes); per-resource gauges (conditions, version, generation, age, last
success), the serving config and its last reload are read at scrape time from
what this process decides (``_state_metrics``), so they always describe what
serves. ``process_*`` (CPU, memory, file
descriptors) come from the client library's process collector.

With a :class:`~server.metrics._pod_metrics.PodMetrics` (a process of ``serve
--workers N``) this process's metrics are also flushed into the pod's
directory, and ``GET /metrics`` and ``/stats`` answer for every process of
the pod (see ``server/metrics/_pod_metrics.py``).

A flush that fails (the directory is full, or cannot be written) never fails
a scrape: ``/metrics`` shows what every process last copied (the last good
figures), and this process's ``pineapple_metrics_flush_failing`` (1 while its
last flush failed) and ``pineapple_metrics_flush_failures_total``, which are
never copied (they say whether the copy works) and are added to each scrape
by the process that answers it. A merge that fails (its lock held too long)
serves the last good one. The failure is logged when it starts and ends.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pineapple import resource
from pineapple.engine import stats_dict
from pineapple.resource.lowlevel import LATENCY_BUCKETS, RefreshResult

from .._engine_extras import engine_stats
from ._client_metrics import client_families
from ._gometrics import EngineTotals, GoCollector, HttpStats
from ._pod_metrics import FLUSH_SECONDS, PodMetrics
from ._probe_metrics import probe_families
from ._request_metrics import RequestFamilies
from ._served import ConfigState, Decided, Served
from ._state_metrics import StateCollector

__all__ = ["CONTENT_TYPE", "ServerMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_GO_RELOAD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)

_log = logging.getLogger("pineapple.server")

_LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, *LATENCY_BUCKETS)
"""Request latency bounds: sub-millisecond ones for `/execute`, then Go's defaults (5 ms-10 s)."""


@dataclass(frozen=True)
class _Family:
    """One instrumented metric family: the attribute that holds it and how it is declared."""

    attr: str
    kind: type[Counter] | type[Histogram]
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None

    def make(self, registry: CollectorRegistry) -> Any:
        extra: dict[str, Any] = {} if self.buckets is None else {"buckets": self.buckets}
        return self.kind(self.name, self.help, list(self.labels), registry=registry, **extra)


_C, _H = Counter, Histogram
_FAMILIES: tuple[_Family, ...] = (
    # attr, type, name, help, labels, buckets (the request families: _request_metrics.py)
    _Family("reloads", _C, "pineapple_config_reloads",
            "Config reload attempts by result (ok, unchanged, error).", ("result",)),
    _Family("reload_duration", _H, "pineapple_config_reload_duration_seconds",
            "Time to build, start and validate a new snapshot."),
    _Family("refreshes", _C, "pineapple_resource_refreshes",
            "Resource fetch attempts by resource, type and result (swapped, not_modified, error).",
            ("resource", "type", "result")),
    _Family("refresh_duration", _H, "pineapple_resource_refresh_duration_seconds",
            "Time of one resource fetch.", ("resource",)),
    _Family("validation_failures", _C, "pineapple_resource_validation_failures",
            "New resource values refused before the swap, by resource and check "
            "(a validator's name, or memory_budget).", ("resource", "check")),
    _Family("worker_restarts", _C, "pineapple_worker_restarts",
            "Worker processes of --workers N started again after they exited or were killed "
            "for their silence (0 in one process)."),
    _Family("read_timeouts", _C, "pineapple_http_read_timeouts",
            "Connections closed because a request's headers (timeout=header) or the whole "
            "request (timeout=read) did not arrive in time.", ("timeout",)),
    _Family("shadow_requests", _C, "pineapple_shadow_requests",
            "Live /execute requests offered to a staged candidate, by outcome: same, changed, "
            "error (the candidate failed where the live config answered), both_failed, or "
            "dropped (its queue was full).", ("outcome",)),
    # The Go engine's families (pine_*), beside ours: see server/metrics/_gometrics.py.
    _Family("go_reloads", _C, "pine_config_reload", "Total successful config reloads."),
    _Family("go_reload_errors", _C, "pine_config_reload_errors", "Total failed config reloads."),
    _Family("go_reload_duration", _H, "pine_config_reload_duration_seconds",
            "Config reload duration in seconds.", (), _GO_RELOAD_BUCKETS),
)  # fmt: skip

_CONFIG_LOADED = (
    "pineapple_config_loaded_timestamp_seconds",
    "When the serving config was loaded, labelled by its content hash.",
)

_RELOAD_RESULTS = ("ok", "unchanged", "error")


class ServerMetrics:
    """The server's metrics; also the ``ManagerMetrics`` every snapshot's Manager reports to.

    Thread safety: every method may be called from any thread (prometheus
    client metrics are thread-safe; ``_last_success`` is guarded by a lock).
    """

    def __init__(
        self,
        current: Callable[[], Served | None],
        pod: PodMetrics | None = None,
        decided: Decided | None = None,
    ) -> None:
        """``decided``: what this process decides for the pod (see ``_state_metrics``);
        None: the serving snapshot's resources (but, in a worker, those another process
        fetches) and, unless a worker, its config."""
        self._current = current
        self.pod = pod
        """The pod's metrics directory (``serve --workers N``); None: this process alone."""
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = RequestFamilies(_LATENCY_BUCKETS, ("/execute",))
        """``pineapple_http_requests`` and ``pineapple_http_request_duration_seconds``."""
        self.registry.register(self.requests)  # first: the families keep their place
        made = {row.attr: row.make(self.registry) for row in _FAMILIES}
        self.reloads: Counter = made["reloads"]
        self.reload_duration: Histogram = made["reload_duration"]
        self.refreshes: Counter = made["refreshes"]
        self.refresh_duration: Histogram = made["refresh_duration"]
        self.validation_failures: Counter = made["validation_failures"]
        self.read_timeouts: Counter = made["read_timeouts"]
        self.worker_restarts: Counter = made["worker_restarts"]
        self.shadow_requests: Counter = made["shadow_requests"]
        self._shadow_outcomes = {  # resolved once: counted off the request path, per request
            outcome: self.shadow_requests.labels(outcome)
            for outcome in ("same", "changed", "error", "both_failed", "dropped")
        }
        for result in _RELOAD_RESULTS:  # every result shows from the first scrape (0)
            self.reloads.labels(result)
        self.go_reloads: Counter = made["go_reloads"]
        self.go_reload_errors: Counter = made["go_reload_errors"]
        self.go_reload_duration: Histogram = made["go_reload_duration"]
        self.http = HttpStats()
        self.engines = EngineTotals()
        self.reload_count = 0
        self.reload_error_count = 0
        self.last_reload_duration_ns = 0
        self._last_success: dict[str, float] = {}
        self._last_reload: tuple[str, float] | None = None
        self._lock = threading.Lock()
        state = decided if decided is not None else self._served_decided()
        self.registry.register(StateCollector(current, state, self.last_success, self.last_reload))
        self.registry.register(_SnapshotCollector(current))
        self.registry.register(GoCollector(current, self.engines, self.http))
        ProcessCollector(registry=self.registry)  # process_*: CPU, memory, descriptors
        self.flush_health = _FlushHealth(pid=None if pod is None else pod.pid)
        """Whether this process's flushes fail (added to a scrape, never flushed)."""
        self._health = CollectorRegistry(auto_describe=False)
        self._health.register(self.flush_health)
        self._last_merge = b""
        """The pod's last merged exposition (served when a merge fails)."""

    def _served_decided(self) -> Decided:
        """What a process that serves decides: the resources of its snapshot that no other
        process fetches, and its config unless it is a worker (its supervisor decides)."""
        pod = self.pod

        def statuses() -> list[resource.ResourceStatus]:
            snap = self._current()
            if snap is None:
                return []
            mine = snap.manager.status()
            if pod is None:
                return mine
            return [st for st in mine if not pod.fetched_elsewhere(st.type)]

        def config() -> ConfigState | None:
            snap = self._current()
            if snap is None or (pod is not None and not pod.decides):
                return None
            return ConfigState(snap.serial, snap.info.content_hash, snap.info.loaded_at)

        return Decided(statuses, config)

    # -- ManagerMetrics -----------------------------------------------------------------

    def observe_refresh(
        self, name: str, type_name: str, result: RefreshResult, seconds: float
    ) -> None:
        """One fetch of resource ``name`` ended with ``result`` after ``seconds``."""
        if self.pod is not None and self.pod.fetched_elsewhere(type_name):
            self._seen(name, result)
            return
        self.refreshes.labels(name, type_name or "unknown", result).inc()
        self.refresh_duration.labels(name).observe(seconds)
        self._seen(name, result)

    def _seen(self, name: str, result: RefreshResult) -> None:
        if result in ("swapped", "not_modified"):
            with self._lock:
                self._last_success[name] = time.time()

    def observe_refusal(self, name: str, type_name: str, check: str) -> None:
        """A new value of ``name`` was refused by ``check`` before the swap."""
        if self.pod is not None and self.pod.fetched_elsewhere(type_name):
            return  # refused where it was fetched, and counted there
        self.validation_failures.labels(name, check).inc()

    def last_reload(self) -> tuple[str, float] | None:
        """The result of the last reload this process counted and when it ended (None: none
        since the start)."""
        with self._lock:
            return self._last_reload

    def last_success(self, name: str) -> float | None:
        """When ``name`` was last fetched successfully by any snapshot (Unix seconds)."""
        with self._lock:
            return self._last_success.get(name)

    # -- requests -------------------------------------------------------------------------

    def observe_execute(self, status: int, seconds: float) -> None:
        """One ``POST /execute`` answered (the hot path, on the event loop)."""
        self.requests.observe_execute(status, seconds)
        self.http.record_execute(status, seconds)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One request to any other route (on the event loop)."""
        self.requests.observe(route, method, status, seconds)
        self.http.record(method, route, status, seconds)

    def observe_shadow(self, outcome: str) -> None:
        """One request offered to a staged candidate ended with ``outcome`` (its thread)."""
        self._shadow_outcomes[outcome].inc()

    def observe_read_timeout(self, kind: str) -> None:
        """A connection was closed by its read deadline (``kind``: ``header`` or ``read``)."""
        self.read_timeouts.labels(kind).inc()

    def observe_reload(self, result: str, seconds: float | None) -> None:
        """One reload attempt (in a worker of a pod: not counted; the supervisor decides)."""
        if self.pod is not None and not self.pod.decides:
            return
        self.reloads.labels(result).inc()
        with self._lock:
            self._last_reload = (result, time.time())
        if seconds is not None and result != "unchanged":
            self.reload_duration.observe(seconds)
        if result == "ok":
            self.reload_count += 1
            self.go_reloads.inc()
            if seconds is not None:
                self.go_reload_duration.observe(seconds)
                self.last_reload_duration_ns = int(seconds * 1e9)
        elif result == "error":
            self.reload_error_count += 1
            self.go_reload_errors.inc()

    def track_engine(self, engine: object) -> None:
        """Count ``engine``'s operators in the ``pine_*`` families (before it serves)."""
        self.engines.track(engine)

    def server_stats(self) -> dict[str, int]:
        """The Go server's ``/stats`` ``server`` entry."""
        return {
            "reload_count": self.reload_count,
            "reload_error_count": self.reload_error_count,
            "last_reload_duration_ns": self.last_reload_duration_ns,
        }

    def _own_counts(self) -> dict[str, Any]:
        """This process's ``/stats`` counts: engine, ``server`` and ``http`` entries."""
        counts: dict[str, Any] = {}
        snap = self._current()
        stats = engine_stats(snap.engine) if snap is not None else None
        if stats is not None:
            counts.update(stats_dict(stats.totals()))
        counts["server"] = self.server_stats()
        counts["http"] = self.http.snapshot()
        return counts

    def stats_counts(self) -> dict[str, Any]:
        """The ``/stats`` counts: this process's, or the pod's (every process's, summed)."""
        own = self._own_counts()
        if self.pod is None:
            return own
        self._flush_counts(own)
        pod = self.pod.stats()
        return {**{k: pod[k] for k in own if k in pod}, **pod}  # in this process's order

    def flush(self) -> None:
        """Copy this process's metrics into the pod's directory (none: nothing to do).

        On the event loop in a worker (the request families are read there).
        Never raises: a failure is counted in :attr:`flush_health` and the files
        keep what the last good flush wrote.
        """
        if self.pod is not None:
            self._flush_counts(self._own_counts())

    def _flush_counts(self, own: dict[str, Any]) -> None:
        assert self.pod is not None
        try:
            self.pod.flush(self.registry.collect(), own)
        except (OSError, TimeoutError) as exc:  # /dev/shm full, unwritable: the next retries
            if self.flush_health.failed():
                _log.warning("cannot flush metrics to %s (retried): %s", self.pod.path, exc)
            return
        if self.flush_health.succeeded():
            _log.info("metrics are flushed to %s again", self.pod.path)

    async def keep_flushing(self) -> None:
        """Flush every ``FLUSH_SECONDS`` until cancelled; returns at once without a pod."""
        # Bounded: one flush per FLUSH_SECONDS; ends when the lifespan cancels it.
        while self.pod is not None:
            await asyncio.sleep(FLUSH_SECONDS)
            self.flush()

    def render(self) -> bytes:
        """The exposition text for ``GET /metrics`` (the pod's, with a pod)."""
        self.flush()
        return self._merged() + generate_latest(self._health)

    async def exposition(self) -> bytes:
        """:meth:`render` for the event loop: the pod's merge of every file runs off it."""
        if self.pod is None:
            return self.render()
        self.flush()  # on the loop, where the request families are written
        merged = await anyio.to_thread.run_sync(self._merged)
        return merged + generate_latest(self._health)

    def _merged(self) -> bytes:
        """This process's families, or the pod's merge (the last good one when it fails)."""
        if self.pod is None:
            return generate_latest(self.registry)
        try:
            self._last_merge = self.pod.render()
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a torn file
            _log.warning(
                "cannot merge the metrics of %s (the last merge is served): %s", self.pod.path, exc
            )
        return self._last_merge


class _FlushHealth(Collector):
    """Whether this process's copies into the pod's directory fail (see module docs).

    Guarantees: ``_failures`` and ``_failing`` change under ``_lock`` (the event
    loop flushes, and so may a route's thread).
    """

    def __init__(self, pid: int | None) -> None:
        self._labels = {} if pid is None else {"pid": str(pid)}
        self._lock = threading.Lock()
        self._failures = 0
        self._failing = False

    def failed(self) -> bool:
        """Count a failed flush; whether it is the first of a run (then say so once)."""
        with self._lock:
            self._failures += 1
            first, self._failing = not self._failing, True
        return first

    def succeeded(self) -> bool:
        """A flush worked; whether it ends a run of failures."""
        with self._lock:
            ended, self._failing = self._failing, False
        return ended

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        names = list(self._labels)
        failing = GaugeMetricFamily(
            "pineapple_metrics_flush_failing",
            "1 while this process cannot copy its metrics into the pod's directory (a full or "
            "unwritable directory): the figures shown are the last copied.",
            labels=names,
        )
        failures = CounterMetricFamily(
            "pineapple_metrics_flush_failures",
            "Copies of this process's metrics into the pod's directory that failed.",
            labels=names,
        )
        with self._lock:
            failing.add_metric(list(self._labels.values()), 1.0 if self._failing else 0.0)
            failures.add_metric(list(self._labels.values()), float(self._failures))
        yield from (failing, failures)


class _SnapshotCollector(Collector):
    """What every serving process shows of its own snapshot, read at scrape time: the
    config it loaded, and the probes and clients of its values."""

    def __init__(self, current: Callable[[], Served | None]) -> None:
        self._current = current

    def describe(self) -> Iterator[Metric]:
        return iter(())  # dynamic: not checked for duplicates at registration

    def collect(self) -> Iterator[Metric]:
        config = GaugeMetricFamily(*_CONFIG_LOADED, labels=["content_hash"])
        snap = self._current()
        if snap is not None:
            config.add_metric([snap.info.content_hash[:16]], snap.info.loaded_at)
        yield config
        if snap is not None:
            yield from probe_families(snap.manager)
            yield from client_families(snap.manager)
