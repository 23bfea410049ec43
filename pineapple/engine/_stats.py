"""``EngineStats``: per-operator and per-run counters of one Engine.

Counts are exact and nearly free: a run is counted once, after the operator
loop (the loop itself holds no counting code). A *regular* run (nothing
skipped, nothing failed) costs one call of its pipeline's counter
(``EngineStats.done``: ``itertools.count().__next__``, one C call that the
GIL makes atomic); a run that skipped or failed an operator is recorded
under ``_lock`` (``irregular``: rare on the request path). Per-operator
executions are derived when read (a run that got past position *j* executed
the operator there unless it skipped or failed it).
Durations cost two clock reads per operator and a separate, observed loop
(measured on small_010: a timed run costs from half a run to a few runs
more, counting the runs after it that it slows), so they are *sampled*: one run in ``time_every``
(default 64) of the engine is timed (a shared ticker), at most
``timed_per_second`` (default 20) in each one-second window, every operator
in it; every traced run is timed too;
histograms, sums, averages and maxima come from those samples (their
``_count`` is the number of timed executions). The bucket bounds are the Go
engine's (``engine_metrics.go``), so dashboards built for it read ours
unchanged. ``benchmarks.engine_cost`` measures what this costs against an
``Engine(stats=False)`` (bound: 1.05x on small_010).

Guarantees:
- Exact counts with the GIL: each regular run is one ``next`` of its
  pipeline's ``itertools.count`` (C code, not interrupted by another
  thread), each irregular run one update of ``_rare`` under ``_lock``. Every
  run is counted in exactly one of the two, once. Without the GIL
  (``sys._is_gil_enabled()`` false, free-threaded builds) ``done`` instead
  adds to the calling thread's own :class:`Shard` (one writer per shard).
- ``tick`` (the sampling choice) is shared: one C call (``itertools.cycle``,
  or a ``count``/``map`` chain), atomic with the GIL; without it a lost
  increment only moves which run is timed. The
  per-second cap's window is shared and updated without a lock on purpose
  (a race only times one run more or less). Nothing exact depends on either.
- Timed samples go to the timing thread's :class:`Shard` (found through the
  ``threading.local`` ``EngineStats.local``: one writer per shard, no lock on
  the request path).
- ``_lock`` also guards the list of shards: a thread registers its shard
  under it (once per thread and engine), and a reader sums under it, so a
  reader never sees an irregular run half-recorded; counters only grow
  between reads.
- The shard of a thread that has ended can no longer change: a reader folds
  it into ``_retired`` and drops it, so the list holds at most one shard per
  live thread (bounded by the worker pools' sizes), however many threads
  came and went.
"""

from __future__ import annotations

import itertools
import operator
import sys
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DAG_BUCKETS",
    "EXECUTED_BUCKETS",
    "OP_BUCKETS",
    "TIMED_PER_SECOND",
    "TIME_EVERY",
    "EngineStats",
    "Histogram",
    "OperatorTotals",
    "Shard",
    "StatsTotals",
    "stats_dict",
]

OP_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)
"""``pine_operator_exec_duration_seconds`` bucket bounds (seconds)."""
DAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""``pine_dag_execution_duration_seconds`` bucket bounds (seconds)."""
EXECUTED_BUCKETS = (1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 450)
"""``pine_dag_operators_executed`` bucket bounds (operators per run)."""
TIME_EVERY = 64
"""Default sampling of durations: one run in this many (per engine) is timed."""
TIMED_PER_SECOND = 20
"""Default cap on timed runs per engine and second (0: none): past a few thousand runs
per second, one in 64 would spend more on timing than the bound allows."""
GIL = bool(getattr(sys, "_is_gil_enabled", lambda: True)())
"""False on a free-threaded build running without the GIL: counting then goes per thread."""

_monotonic = time.monotonic
_OP_NS = tuple(int(b * 1e9) for b in OP_BUCKETS)
_DAG_NS = tuple(int(b * 1e9) for b in DAG_BUCKETS)


@dataclass
class Histogram:
    """Per-bucket (not cumulative) counts, the last one past every bound, and the sum."""

    bounds: tuple[float, ...]
    counts: list[int]
    sum: float

    @property
    def count(self) -> int:
        """Observations in all buckets."""
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """``(le, count)`` pairs as Prometheus exposes them, ``inf`` last."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


@dataclass
class OperatorTotals:
    """What one operator did since its engine was built (durations: timed samples)."""

    exec_count: int
    skip_count: int
    error_count: int
    max_duration_ns: int
    durations: Histogram

    @property
    def avg_duration_ns(self) -> int:
        """Mean of the timed executions."""
        n = self.durations.count
        return int(self.durations.sum * 1e9) // n if n else 0

    def to_dict(self) -> dict[str, int]:
        """The Go server's ``/stats`` ``operators`` entry (total: mean x executions)."""
        avg = self.avg_duration_ns
        return {
            "exec_count": self.exec_count,
            "skip_count": self.skip_count,
            "error_count": self.error_count,
            "total_duration_ns": avg * (self.exec_count + self.error_count),
            "max_duration_ns": self.max_duration_ns,
            "avg_duration_ns": avg,
        }


@dataclass
class StatsTotals:
    """Every counter of an engine, summed over its threads."""

    operators: dict[str, OperatorTotals]
    runs: int
    dag_success: int
    dag_error: int
    dag_durations: Histogram
    executed: Histogram

    def scheduler(self) -> dict[str, int]:
        """The Go server's ``/stats`` ``scheduler`` entry (operators run one at a time here)."""
        return {"run_count": self.runs, "peak_concurrency": 1 if self.runs else 0}


class Shard:
    """One thread's counters (only that thread writes them), or the irregular runs'
    (written under ``EngineStats._lock``), or a sum of them (a reader's)."""

    __slots__ = (
        "dag_buckets",
        "dag_errors",
        "dag_ns",
        "errors",
        "executed",
        "max_ns",
        "op_buckets",
        "op_ns",
        "reached",
        "skips",
        "thread",
        "uneven_runs",
    )

    def __init__(self, n: int, lengths: Sequence[int], thread: threading.Thread | None) -> None:
        self.thread = thread
        # Per pipeline: runs that stopped after k steps (k = 0..len). A run that
        # skipped or failed an operator executed fewer than k: those runs are
        # also counted in ``uneven_runs`` by (pipeline, k, executed).
        self.reached = [[0] * (m + 1) for m in lengths]
        self.uneven_runs: dict[tuple[int, int, int], int] = {}
        self.skips = [0] * n
        self.errors = [0] * n
        self.dag_errors = 0
        # Timed samples only:
        self.op_ns = [0] * n
        self.max_ns = [0] * n
        self.op_buckets = [[0] * (len(_OP_NS) + 1) for _ in range(n)]
        self.dag_ns = 0
        self.dag_buckets = [0] * (len(_DAG_NS) + 1)

    def irregular(
        self, pipeline: int, end: int, skipped: list[int] | None, failed: int, error: bool
    ) -> None:
        """The rest of a run of ``pipeline`` that stopped after ``end`` steps and
        skipped the operators in slots ``skipped``, failed the one in slot
        ``failed`` (-1: none) or ended in an error (``reached`` is counted by
        the engine)."""
        skips = skipped or ()
        for slot in skips:  # bounded: the pipeline's length
            self.skips[slot] += 1
        if error:
            self.dag_errors += 1
        if failed >= 0:
            self.errors[failed] += 1
        executed = end - len(skips) - (failed >= 0)
        if executed != end:
            key = (pipeline, end, executed)  # bounded: at most (len + 1) ** 2 keys per pipeline
            self.uneven_runs[key] = self.uneven_runs.get(key, 0) + 1

    def timed(self, slot: int, ns: int) -> None:
        """One timed execution of operator ``slot``."""
        self.op_ns[slot] += ns
        if ns > self.max_ns[slot]:
            self.max_ns[slot] = ns
        self.op_buckets[slot][bisect_left(_OP_NS, ns)] += 1

    def timed_run(self, ns: int) -> None:
        """One timed run."""
        self.dag_ns += ns
        self.dag_buckets[bisect_left(_DAG_NS, ns)] += 1

    def fold(self, other: Shard) -> None:
        """Add ``other``'s counts to this one (reader side, under the lock)."""
        for mine_rows, theirs_rows in (
            (self.reached, other.reached),
            (self.op_buckets, other.op_buckets),
        ):
            for mine, theirs in zip(mine_rows, theirs_rows, strict=True):
                _add(mine, theirs)
        for mine, theirs in (
            (self.skips, other.skips),
            (self.errors, other.errors),
            (self.op_ns, other.op_ns),
            (self.dag_buckets, other.dag_buckets),
        ):
            _add(mine, theirs)
        for i, v in enumerate(other.max_ns):  # bounded: one per operator
            self.max_ns[i] = max(self.max_ns[i], v)
        for key, n in list(other.uneven_runs.items()):
            self.uneven_runs[key] = self.uneven_runs.get(key, 0) + n
        self.dag_errors += other.dag_errors
        self.dag_ns += other.dag_ns


def _add(mine: list[int], theirs: list[int]) -> None:
    for i, v in enumerate(theirs):  # bounded: the lists have the same, fixed length
        mine[i] += v


class EngineStats:
    """The counters of one Engine.

    ``names``: one slot per operator name; ``pipelines``: each pipeline's
    slots in execution order (a pipeline is identified by its index here).
    ``time_every``: one run in this many is timed (>= 1), at most
    ``timed_per_second`` in each second (0: no cap). ``gil``: whether
    the GIL makes a C call atomic (default: this interpreter's state).
    """

    def __init__(
        self,
        names: Sequence[str],
        pipelines: Sequence[Sequence[int]],
        time_every: int = TIME_EVERY,
        *,
        timed_per_second: int = TIMED_PER_SECOND,
        gil: bool = GIL,
    ) -> None:
        if time_every < 1:
            raise ValueError(f"time_every must be >= 1, got {time_every}")
        if timed_per_second < 0:
            raise ValueError(f"timed_per_second must be >= 0, got {timed_per_second}")
        self.names: tuple[str, ...] = tuple(names)
        self.pipelines: tuple[tuple[int, ...], ...] = tuple(tuple(p) for p in pipelines)
        self.time_every = time_every
        self.timed_per_second = timed_per_second
        self.tick: Callable[[], bool] = _ticker(time_every, gil)
        """True on one call in ``time_every``, the first included; one C call (see
        :func:`_ticker` and the Guarantees)."""
        self._window = -1e18  # when the current one-second window began (monotonic)
        self._in_window = 0  # timed runs in it
        self._lengths = [len(p) for p in self.pipelines]
        self.local = threading.local()
        """Each thread's :class:`Shard` as ``local.shard``."""
        self._lock = threading.Lock()
        self._shards: list[Shard] = []
        self._retired = Shard(len(self.names), self._lengths, None)
        self._rare = Shard(len(self.names), self._lengths, None)
        self._regular: list[itertools.count[int]] = []
        done: list[Callable[[], object]]
        if gil:
            self._regular = [itertools.count() for _ in self.pipelines]
            done = [c.__next__ for c in self._regular]
        else:
            done = [self._per_thread(p) for p in range(len(self.pipelines))]
        self.done: tuple[Callable[[], object], ...] = tuple(done)
        """Per pipeline: count one regular run (nothing skipped or failed) of it."""

    def _per_thread(self, pipeline: int) -> Callable[[], object]:
        end = self._lengths[pipeline]

        def done() -> None:
            self.shard().reached[pipeline][end] += 1

        return done

    def may_time(self) -> bool:
        """Called by a run that :attr:`tick` chose: True when the per-second cap lets it
        be timed."""
        cap = self.timed_per_second
        if cap == 0:
            return True
        now = _monotonic()
        if now - self._window >= 1.0:
            self._window, self._in_window = now, 0
        if self._in_window >= cap:
            return False
        self._in_window += 1
        return True

    def irregular(
        self, pipeline: int, end: int, skipped: list[int] | None, failed: int, error: bool
    ) -> None:
        """Count a run of ``pipeline`` that stopped after ``end`` steps, skipped the
        operators in slots ``skipped``, failed the one in slot ``failed`` (-1: none)
        or ended in an error (see :meth:`Shard.irregular`)."""
        with self._lock:
            rare = self._rare
            rare.reached[pipeline][end] += 1
            rare.irregular(pipeline, end, skipped, failed, error)

    def shard(self) -> Shard:
        """The calling thread's shard (created and registered on first use)."""
        try:
            shard: Shard = self.local.shard
        except AttributeError:
            shard = Shard(len(self.names), self._lengths, threading.current_thread())
            with self._lock:
                self._shards.append(shard)
            self.local.shard = shard
        return shard

    def totals(self) -> StatsTotals:
        """Everything counted so far, summed over the threads."""
        total = Shard(len(self.names), self._lengths, None)
        with self._lock:
            live: list[Shard] = []
            for shard in self._shards:  # bounded: one shard per live thread
                thread = shard.thread
                if thread is not None and not thread.is_alive():
                    self._retired.fold(shard)
                else:
                    live.append(shard)
                    total.fold(shard)
            self._shards = live
            total.fold(self._retired)
            total.fold(self._rare)
            for p, counter in enumerate(self._regular):  # bounded: one per pipeline
                total.reached[p][self._lengths[p]] += _value(counter)
        return self._totals(total)

    def _totals(self, total: Shard) -> StatsTotals:
        n = len(self.names)
        started = [0] * n  # runs that got past each operator's position
        runs = 0
        executed = [0] * (len(EXECUTED_BUCKETS) + 1)
        executed_sum = 0
        for p, slots in enumerate(self.pipelines):
            reached = total.reached[p]
            runs += sum(reached)
            beyond = 0
            for pos in range(len(slots) - 1, -1, -1):  # bounded: the pipeline's length
                beyond += reached[pos + 1]
                started[slots[pos]] += beyond
            for e, count in enumerate(reached):
                executed[bisect_left(EXECUTED_BUCKETS, e)] += count
                executed_sum += e * count
        for (_p, end, e), count in total.uneven_runs.items():  # bounded: see irregular()
            executed[bisect_left(EXECUTED_BUCKETS, end)] -= count
            executed[bisect_left(EXECUTED_BUCKETS, e)] += count
            executed_sum += (e - end) * count
        operators = {
            name: OperatorTotals(
                started[i] - total.skips[i] - total.errors[i],
                total.skips[i],
                total.errors[i],
                total.max_ns[i],
                Histogram(OP_BUCKETS, total.op_buckets[i], total.op_ns[i] / 1e9),
            )
            for i, name in enumerate(self.names)
        }
        return StatsTotals(
            operators,
            runs,
            runs - total.dag_errors,
            total.dag_errors,
            Histogram(DAG_BUCKETS, total.dag_buckets, total.dag_ns / 1e9),
            Histogram(tuple(float(b) for b in EXECUTED_BUCKETS), executed, float(executed_sum)),
        )


CYCLE_MAX = 4096
"""Up to this ``time_every`` the ticker cycles through a tuple (the cheapest C call)."""


def _ticker(time_every: int, gil: bool) -> Callable[[], bool]:
    """A callable returning True on its 1st, (1 + time_every)th, ... call.

    With the GIL and a small ``time_every``: ``itertools.cycle`` over
    ``(True, False, ...)`` (``time_every`` entries). Otherwise
    ``not (n % time_every)`` over ``itertools.count``, still C calls only.
    """
    if gil and time_every <= CYCLE_MAX:
        return itertools.cycle((True,) + (False,) * (time_every - 1)).__next__
    chain = map(operator.mod, itertools.count(), itertools.repeat(time_every))
    return map(operator.not_, chain).__next__


def _value(counter: itertools.count[int]) -> int:
    """What ``next(counter)`` would return now, without advancing it (``count(N)``)."""
    text = repr(counter)
    return int(text[text.index("(") + 1 : -1])


def stats_dict(totals: StatsTotals) -> dict[str, Any]:
    """``{"operators": ..., "scheduler": ...}`` as the Go server's ``/stats`` shows them."""
    return {
        "operators": {name: t.to_dict() for name, t in totals.operators.items()},
        "scheduler": totals.scheduler(),
    }
