"""The state a team alerts on, read at scrape time: resources, config, requests, build.

Each resource's conditions (``pineapple_resource_condition``, one series per
condition and status, 1 for the status it has), version, generation, the age
of its serving value, its last success and readiness; the serving config's
generation and the outcome of its last reload (present from the first scrape:
the config a process serves loaded, so ``1`` until a reload says otherwise);
``POST /execute`` requests in flight; ``pineapple_build_info``; under
``--workers N``, the workers wanted and serving (restarts are a counter,
``pineapple_worker_restarts_total``, in ``_metrics.py``).

Who shows what (``Decided``): a resource's state comes from the process that
decides it, so the pod shows one answer whichever worker is scraped. In one
process, this process; under ``--workers N``, the supervisor for the shared
resources and the config, each worker for its own per-worker resources. The
pod merges each family as ``GAUGE_MODES`` (``_pod_metrics.py``) says:
conditions, versions and ages by their maximum (a per-worker resource shows
1 for a status if any worker has it, and its oldest value), readiness and
last success by their minimum, requests in flight summed.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import pineapple
from pineapple import _native as core_native

from .. import _native as server_native
from ._served import Decided, Served

__all__ = ["CONDITION_STATUSES", "StateCollector"]

CONDITION_STATUSES = ("True", "False", "Unknown")
"""Every status a condition can have: each gets its series (0 or 1)."""

_LABELS = ("resource", "type")
_RESOURCE_GAUGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # name, help, labels
    ("pineapple_resource_condition",
     "1 for the status each condition of the resource has (Ready, Fresh, Valid, Pinned, "
     "Reachable), 0 for the others.", (*_LABELS, "condition", "status")),
    ("pineapple_resource_version", "Successful swaps of the resource's value (starts at 1).",
     _LABELS),
    ("pineapple_resource_generation", "Changes of the resource's config entry.", _LABELS),
    ("pineapple_resource_age_seconds", "Seconds since the serving value was loaded.", _LABELS),
    ("pineapple_resource_last_success_timestamp_seconds",
     "When the resource was last fetched successfully (Unix seconds).", _LABELS),
    ("pineapple_resource_ready", "1 when the resource has a value to lend.", _LABELS),
)  # fmt: skip


class StateCollector(Collector):
    """The families of the module docs, for what ``decided`` says this process decides."""

    def __init__(
        self,
        current: Callable[[], Served | None],
        decided: Decided,
        last_success: Callable[[str], float | None],
        last_reload: Callable[[], tuple[str, float] | None],
    ) -> None:
        self._current = current
        self._decided = decided
        self._last_success = last_success
        self._last_reload = last_reload
        self._build = {
            "version": pineapple.__version__,
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "compiled": _yes(core_native.compiled()),
            "server_compiled": _yes(server_native.compiled()),
        }

    def describe(self) -> Iterator[Metric]:
        return iter(())  # dynamic: not checked for duplicates at registration

    def collect(self) -> Iterator[Metric]:
        yield from self._resources()
        yield from self._config()
        yield from self._workers()
        snap = self._current()
        if snap is not None:  # a process that serves requests (not the supervisor)
            flight = GaugeMetricFamily(
                "pineapple_http_requests_in_flight",
                "POST /execute requests holding the serving snapshot now.",
            )
            flight.add_metric([], max(0, snap.refs - 1))
            yield flight
        info = GaugeMetricFamily(
            "pineapple_build_info",
            "1, labelled with the version of Pineapple, of Python, and whether the engine core "
            "and the server run compiled (mypyc) or as pure Python.",
            labels=list(self._build),
        )
        info.add_metric(list(self._build.values()), 1.0)
        yield info

    def _resources(self) -> Iterator[Metric]:
        condition, version, generation, age, success, ready = (
            GaugeMetricFamily(name, help_text, labels=list(labels))
            for name, help_text, labels in _RESOURCE_GAUGES
        )
        now = time.time()
        for st in self._decided.statuses():  # bounded: the resources
            labels = [st.name, st.type or "unknown"]
            for cond in st.conditions:
                for status in CONDITION_STATUSES:
                    value = 1.0 if cond.status == status else 0.0
                    condition.add_metric([*labels, cond.type, status], value)
            version.add_metric(labels, st.version)
            generation.add_metric(labels, st.generation)
            ready.add_metric(labels, 1.0 if st.ready else 0.0)
            if st.loaded_at is not None:
                age.add_metric(labels, max(0.0, now - st.loaded_at))
            last = max(
                (t for t in (st.loaded_at, self._last_success(st.name)) if t is not None),
                default=None,
            )
            if last is not None:
                success.add_metric(labels, last)
        yield from (condition, version, generation, age, success, ready)

    def _config(self) -> Iterator[Metric]:
        state = self._decided.config()
        if state is None:  # decided by another process of the pod
            return
        serving = GaugeMetricFamily(
            "pineapple_config_generation",
            "The serving config's generation (one process: its snapshot; a pod: the "
            "supervisor's config generation), labelled by its revision (short content hash).",
            labels=["revision"],
        )
        serving.add_metric([state.content_hash[:12]], state.generation)
        last = self._last_reload()
        ok = GaugeMetricFamily(
            "pineapple_config_last_reload_success",
            "1 when the last reload was applied or found the config unchanged (or none was "
            "tried since the start), 0 when it failed and the previous config serves.",
        )
        ok.add_metric([], 0.0 if last is not None and last[0] == "error" else 1.0)
        when = GaugeMetricFamily(
            "pineapple_config_last_reload_timestamp_seconds",
            "When the last reload ended (Unix seconds); before any, when the serving config "
            "was accepted.",
        )
        when.add_metric([], last[1] if last is not None else state.accepted_at)
        yield from (serving, ok, when)

    def _workers(self) -> Iterator[Metric]:
        counts = self._decided.workers
        if counts is None:  # not a supervisor
            return
        wanted, serving = counts()
        total = GaugeMetricFamily(
            "pineapple_workers", "Worker processes of --workers N the supervisor keeps running."
        )
        total.add_metric([], wanted)
        live = GaugeMetricFamily(
            "pineapple_workers_serving",
            "Worker processes that beat and serve now (a restarting or silent one does not).",
        )
        live.add_metric([], serving)
        yield from (total, live)


def _yes(flag: bool) -> str:
    return "true" if flag else "false"
