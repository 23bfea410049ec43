"""``PodMetrics``: the metrics of every process of ``serve --workers N``, in one directory.

Each process (the supervisor and every worker) keeps counting the way one
process does (plain counters on the event loop for ``/execute``, the client
library's metrics elsewhere) and *flushes* a copy of what its registry
collects into files of its own, in ``prometheus_client``'s multiprocess
format (``counter_<pid>.db``, ``histogram_<pid>.db``, ``gauge_<mode>_<pid>.db``)
plus ``stats_<pid>.json`` for ``/stats``. A scrape of any worker flushes that
worker, then merges every file with ``prometheus_client``'s
``MultiProcessCollector``: counters and histograms are summed over the
processes; a gauge is merged as ``GAUGE_MODES`` says (a family of the pod's
state, which one process decides, once for the pod) or else shown once per
process with a ``pid`` label.

A process flushes every ``FLUSH_SECONDS`` (a worker on its event loop, the
supervisor on its supervision loop) and at each of its own scrapes, so one
scrape shows every other process's counts as they were at most
``FLUSH_SECONDS`` ago. Flushing copies values; the request path is unchanged.

When a process has died, the supervisor folds its counters and histograms
into ``counter_dead.db``/``histogram_dead.db``/``summary_dead.db`` and its
``/stats`` counts into ``stats_dead.json``, then removes its files (its
gauges go with them): the directory holds one set of files per live process
plus one archive, whatever the number of restarts.

Guarantees:
- A process writes only its own files, each as a new file renamed over the
  old one (atomic): a reader sees a whole flush, never part of one.
- Folding a dead process (:meth:`PodMetrics.retire`) holds an exclusive
  ``flock`` on ``.lock``; a scrape holds it shared while it lists and reads
  the files. So no scrape sees a dead process both in the archive and in its
  own files (counted twice) or in neither (counted zero times): totals never
  go backwards across a worker's death, up to what it counted after its last
  flush. Each lock is tried for at most ``LOCK_SECONDS``.
- Every file read is bounded: ``MAX_STATS_BYTES`` for a stats file; the
  multiprocess files hold one entry per series this code defines.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import logging
import math
import os
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.mmap_dict import mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from .._atomic_file import write_atomically

__all__ = [
    "FLUSH_SECONDS",
    "GAUGE_MODES",
    "LOCK_SECONDS",
    "MAX_STATS_BYTES",
    "PodMetrics",
    "merge_stats",
]

FLUSH_SECONDS = 0.5
"""How often each process copies its metrics into the directory."""
LOCK_SECONDS = 2.0
"""Longest wait for the directory's lock (a fold takes milliseconds)."""
MAX_STATS_BYTES = 4 * 1024 * 1024
"""A ``stats_*.json`` larger than this is not one we wrote; it is skipped."""

_SUMMED = ("counter", "histogram", "summary")
"""Metric types summed over processes; every other type is a gauge."""
_PER_PROCESS = "liveall"
"""The mode of a gauge family not in ``GAUGE_MODES``: one series per process (``pid``)."""
GAUGE_MODES: dict[str, str] = {
    # The pod's state (server/metrics/_state_metrics.py): one process decides each series
    # (a shared resource and the config: the supervisor), so no pid label.
    "pineapple_resource_condition": "livemax",  # a status some process has
    "pineapple_resource_version": "livemax",
    "pineapple_resource_generation": "livemax",
    "pineapple_resource_age_seconds": "livemax",  # the oldest value served
    "pineapple_resource_last_success_timestamp_seconds": "livemin",
    "pineapple_resource_ready": "livemin",  # 0 if any process has nothing to lend
    "pineapple_config_generation": "livemax",
    "pineapple_config_last_reload_success": "livemin",
    "pineapple_config_last_reload_timestamp_seconds": "livemax",
    "pineapple_http_requests_in_flight": "livesum",
    "pineapple_build_info": "livemax",
    "pineapple_workers": "livemax",
    "pineapple_workers_serving": "livemax",
}
"""How a gauge family merges over the pod's processes (``prometheus_client``'s
multiprocess modes: ``livemax``, ``livemin``, ``livesum`` drop the ``pid``
label); every other gauge is shown per process."""
_MODES = (_PER_PROCESS, *sorted(set(GAUGE_MODES.values())))
_DEAD = "dead"
_INT = struct.Struct("i")
_TWO_DOUBLES = struct.Struct("dd")
_LOCK_POLL = 0.01

_log = logging.getLogger("pineapple.server")


class PodMetrics:
    """One process's side of the pod's metrics directory (see the module's Guarantees).

    >>> pod = PodMetrics(store_path / "metrics")   # doctest: +SKIP
    >>> pod.flush(registry.collect(), stats)        # doctest: +SKIP
    >>> pod.render()                                # doctest: +SKIP  (every process's)
    """

    def __init__(
        self,
        path: str | Path,
        pid: int | None = None,
        *,
        decides: bool = False,
        fetched_elsewhere: Callable[[str], bool] = lambda type_name: False,
    ) -> None:
        self.path = Path(path)
        self.pid = os.getpid() if pid is None else pid
        self._keys = _Keys()
        self.decides = decides
        """Whether this process counts config reloads (the supervisor, which decides them;
        a worker's rebuild of a generation the supervisor accepted is not a reload)."""
        self.fetched_elsewhere = fetched_elsewhere
        """Types whose fetches another process counts (in a worker: the shared ones, which
        the supervisor fetches; a worker mapping a snapshot is not a source read)."""

    @classmethod
    def create(cls, path: str | Path) -> PodMetrics:
        """Make the directory (mode 0700) and return the supervisor's side of it."""
        Path(path).mkdir(mode=0o700, exist_ok=True)
        return cls(path, decides=True)

    # -- one process's own files --------------------------------------------------------

    def flush(self, families: Iterable[Metric], stats: Mapping[str, Any] | None = None) -> None:
        """Replace this process's files with ``families`` (what its registry collects)."""
        rows: dict[str, list[tuple[_Key, float]]] = {
            typ: [] for typ in (*_SUMMED, *(f"gauge_{mode}" for mode in _MODES))
        }
        for metric in families:  # bounded: the families this code defines
            if metric.type in _SUMMED:
                typ = metric.type
            else:
                typ = f"gauge_{GAUGE_MODES.get(metric.name, _PER_PROCESS)}"
            rows[typ].extend(_entries(metric))
        for typ, entries in rows.items():
            _write_db(self.path / f"{typ}_{self.pid}.db", entries, self._keys)
        if stats is not None:
            write_atomically(self.path / f"stats_{self.pid}.json", orjson.dumps(stats))

    # -- the pod's view -----------------------------------------------------------------

    def collect(self) -> list[Metric]:
        """Every process's families, merged (counters summed, gauges by ``pid``)."""
        with self._locked(fcntl.LOCK_SH):
            return self._merged()

    def _merged(self) -> list[Metric]:
        """The merge of every file, in name order (so every scrape adds in the same order)."""
        files = sorted(glob.glob(os.path.join(self.path, "*.db")))
        return list(MultiProcessCollector.merge(files, accumulate=True))  # type: ignore[no-untyped-call]

    def render(self) -> bytes:
        """The exposition text of :meth:`collect`."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Merged(self.collect()))
        return generate_latest(registry)

    def stats(self) -> dict[str, Any]:
        """Every process's ``/stats`` counts, summed (see :func:`merge_stats`)."""
        with self._locked(fcntl.LOCK_SH):
            parts = [_read_stats(Path(p)) for p in sorted(glob.glob(str(self.path / "stats_*")))]
        total: dict[str, Any] = {}
        for part in parts:
            total = merge_stats(total, part)
        return total

    # -- the supervisor: a process has died ---------------------------------------------

    def pids(self) -> set[int]:
        """The processes that have files here (the archive is none of them)."""
        found: set[int] = set()
        for entry in os.scandir(self.path):  # bounded: a few files per live process
            stem = entry.name.rsplit(".", 1)[0]
            tail = stem.rsplit("_", 1)[-1]
            if not entry.name.startswith(".") and tail.isdigit():
                found.add(int(tail))
        return found

    def retire(self, pid: int) -> bool:
        """Fold the files of dead process ``pid`` into the archive; whether it had any."""
        mine = [self.path / f"{typ}_{pid}.db" for typ in _SUMMED]
        gauges = [self.path / f"gauge_{mode}_{pid}.db" for mode in _MODES]
        stats = self.path / f"stats_{pid}.json"
        if not any(p.exists() for p in (*mine, *gauges, stats)):
            return False
        with self._locked(fcntl.LOCK_EX):
            before = _totals(self._merged())
            archives: dict[Path, list[tuple[_Key, float]]] = {}
            for typ, path in zip(_SUMMED, mine, strict=True):
                if path.exists():
                    archive = self.path / f"{typ}_{_DEAD}.db"
                    sources = [str(p) for p in (archive, path) if p.exists()]
                    merged = MultiProcessCollector.merge(sources, accumulate=False)  # type: ignore[no-untyped-call]
                    archives[archive] = [e for m in merged for e in _raw_entries(m)]
                    _write_db(archive, archives[archive], _Keys())
                    path.unlink()
            self._never_lower(before, archives)
            if stats.exists():
                archive = self.path / f"stats_{_DEAD}.json"
                total = merge_stats(_read_stats(archive), _read_stats(stats))
                write_atomically(archive, orjson.dumps(total))
            for path in (*mine, *gauges, stats):
                path.unlink(missing_ok=True)
        return True

    def _never_lower(
        self,
        before: dict[tuple[str, tuple[tuple[str, str], ...]], float],
        archives: dict[Path, list[tuple[_Key, float]]],
    ) -> None:
        """Raise archived sums by a rounding step where the fold lowered a total.

        Adding the dead process's values to the archive first, then the rest,
        rounds differently from adding them in file order: a float sum (a
        histogram's ``_sum``) may come out one unit in the last place lower,
        which Prometheus would take for a counter reset. Bounded: 4 rounds.
        """
        for _ in range(4):
            after = _totals(self._merged())
            low = {k for k, v in before.items() if after.get(k, v) < v}
            if not low:
                return
            for archive, entries in archives.items():
                entries[:] = [
                    (key, math.nextafter(value, math.inf) if (key[2], key[3]) in low else value)
                    for key, value in entries
                ]
                _write_db(archive, entries, _Keys())

    @contextlib.contextmanager
    def _locked(self, how: int) -> Iterator[None]:
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + LOCK_SECONDS
            # Bounded: LOCK_SECONDS, in steps of _LOCK_POLL.
            while True:
                try:
                    fcntl.flock(fd, how | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"{self.path}: metrics lock held for over {LOCK_SECONDS}s"
                        ) from None
                    time.sleep(_LOCK_POLL)
            yield
        finally:
            os.close(fd)  # releases the lock


class _Merged(Collector):
    def __init__(self, metrics: list[Metric]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self._metrics)


_Key = tuple[str, str, str, tuple[tuple[str, str], ...]]


def _key(metric: Metric, sample_name: str, labels: Mapping[str, str]) -> _Key:
    return (metric.name, metric.documentation, sample_name, tuple(labels.items()))


class _Keys:
    """The encoded head of each series' entry in a multiprocess file, made once per series.

    Bounded: one entry per series this process has flushed.
    """

    def __init__(self) -> None:
        self._heads: dict[_Key, bytes] = {}

    def head(self, key: _Key) -> bytes:
        head = self._heads.get(key)
        if head is None:
            name, help_text, sample, labels = key
            text = mmap_key(name, sample, [k for k, _ in labels], [v for _, v in labels], help_text)
            encoded = text.encode()
            padded = encoded + b" " * (8 - (len(encoded) + 4) % 8)  # as MmapedDict aligns
            head = self._heads[key] = _INT.pack(len(encoded)) + padded
        return head


def _entries(metric: Metric) -> Iterator[tuple[_Key, float]]:
    """``(key, value)`` of ``metric``'s samples as the multiprocess files hold them.

    Histogram buckets are stored per bucket (the merge adds them up again);
    ``_count`` (the sum of the buckets) and ``_created`` are left out.
    """
    if metric.type == "histogram":
        yield from _histogram_entries(metric)
        return
    for sample in metric.samples:
        if sample.name.endswith("_created"):
            continue
        yield _key(metric, sample.name, sample.labels), float(sample.value)


def _histogram_entries(metric: Metric) -> Iterator[tuple[_Key, float]]:
    buckets: dict[tuple[tuple[str, str], ...], list[tuple[float, str, float]]] = {}
    for sample in metric.samples:
        if sample.name.endswith("_bucket"):
            rest = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
            le = sample.labels.get("le", "+Inf")
            buckets.setdefault(rest, []).append((float(le), le, float(sample.value)))
        elif sample.name.endswith("_sum"):
            yield _key(metric, sample.name, sample.labels), float(sample.value)
    for rest, rows in buckets.items():
        below = 0.0
        for _, le, cumulative in sorted(rows):
            labels = {**dict(rest), "le": le}
            yield _key(metric, metric.name + "_bucket", labels), cumulative - below
            below = cumulative


def _totals(metrics: list[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``(sample, labels) -> value`` of the summed families' samples (gauges left out)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): float(s.value)
        for m in metrics
        if m.type in _SUMMED
        for s in m.samples
    }


def _raw_entries(metric: Metric) -> Iterator[tuple[_Key, float]]:
    """The samples of a merge made with ``accumulate=False`` (buckets per bucket)."""
    for sample in metric.samples:
        yield _key(metric, sample.name, sample.labels), float(sample.value)


def _write_db(path: Path, entries: list[tuple[_Key, float]], keys: _Keys) -> None:
    """Write ``entries`` as the file ``MmapedDict`` would hold them, renamed into place."""
    if not entries:
        path.unlink(missing_ok=True)
        return
    now = time.time()
    body = b"".join(keys.head(key) + _TWO_DOUBLES.pack(value, now) for key, value in entries)
    used = 8 + len(body)  # the header: bytes used, then 4 bytes of padding
    write_atomically(path, _INT.pack(used) + b"\0\0\0\0" + body)


def _read_stats(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as source:
            data = source.read(MAX_STATS_BYTES + 1)
    except FileNotFoundError:
        return {}
    if len(data) > MAX_STATS_BYTES:
        _log.warning("%s: over %d bytes, not ours; skipped", path, MAX_STATS_BYTES)
        return {}
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        _log.warning("%s: not JSON; skipped", path)
        return {}
    return parsed if isinstance(parsed, dict) else {}


_HIGHEST = ("max_", "peak_", "last_")
"""``/stats`` fields that are a highest value, not a count: the pod's is the largest."""


def merge_stats(a: Mapping[str, Any], b: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """Two processes' ``/stats`` counts added up.

    Numbers are summed, except fields named ``max_*``, ``peak_*`` and
    ``last_*`` (the larger one); an ``avg_duration_ns`` is computed again from
    the summed ``total_duration_ns`` and counts. Anything else keeps ``a``'s.
    Bounded: the depth of the ``/stats`` shape (at most 8 levels).
    """
    out: dict[str, Any] = dict(a)
    for key, theirs in b.items():
        mine = out.get(key)
        if key not in out:
            out[key] = theirs
        elif isinstance(mine, Mapping) and isinstance(theirs, Mapping) and depth < 8:
            out[key] = merge_stats(mine, theirs, depth + 1)
        elif _number(mine) and _number(theirs):
            out[key] = max(mine, theirs) if key.startswith(_HIGHEST) else mine + theirs
    if "avg_duration_ns" in out and "total_duration_ns" in out:
        runs = int(out.get("exec_count", 0)) + int(out.get("error_count", 0))
        out["avg_duration_ns"] = int(out["total_duration_ns"]) // runs if runs else 0
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
