"""``PodMetrics`` inside one test process: several processes' files, merged and folded."""

from __future__ import annotations

import fcntl
import random
import threading
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pineapple.resource import ResourceStatus
from pineapple.resource.lowlevel import Condition
from server.metrics._metrics import ServerMetrics
from server.metrics._pod_metrics import PodMetrics, merge_stats
from server.metrics._served import ConfigState, Decided

DURATIONS = "pineapple_http_request_duration_seconds"


def _samples(text: str, prefix: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``(sample name, labels without pid) -> value`` of the families starting with prefix."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith(prefix) and not s.name.endswith("_created"):
                labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "pid"))
                out[(s.name, labels)] = out.get((s.name, labels), 0.0) + s.value
    return out


def _record(metrics: ServerMetrics, seconds: list[float]) -> None:
    for i, s in enumerate(seconds):
        metrics.observe_execute(200 if i % 4 else 500, s)
        metrics.observe_request("/healthz", "GET", 200, s / 10)


def test_the_pod_shows_what_one_process_doing_all_the_work_shows(tmp_path: Path) -> None:
    a = [0.0001 * i for i in range(40)]
    b = [0.003 * i for i in range(25)]
    workers = [ServerMetrics(lambda: None, PodMetrics(tmp_path, pid)) for pid in (1001, 1002)]
    _record(workers[0], a)
    _record(workers[1], b)
    alone = ServerMetrics(lambda: None)
    _record(alone, a + b)
    workers[1].flush()
    pod = workers[0].render().decode()  # flushes itself, then merges every file
    for prefix in ("pineapple_http_requests", DURATIONS, "pine_http_requests"):
        want = _samples(alone.render().decode(), prefix)
        assert _samples(pod, prefix) == pytest.approx(want, rel=1e-12), prefix
    rss = [
        s.labels["pid"]
        for f in text_string_to_metric_families(pod)
        for s in f.samples
        if s.name == "process_resident_memory_bytes"
    ]
    assert sorted(rss) == ["1001", "1002"]  # a gauge: once per process, by pid
    stats = workers[0].stats_counts()
    assert stats["http"]["requests_total"]["POST /execute 2xx"] == 48  # 30 + 18
    assert stats["http"]["requests_total"]["POST /execute 5xx"] == 17  # 10 + 7


def test_a_dead_process_is_folded_without_changing_any_total(tmp_path: Path) -> None:
    supervisor = PodMetrics.create(tmp_path)
    live = ServerMetrics(lambda: None, PodMetrics(tmp_path, 2000))
    _record(live, [0.001] * 5)
    live.flush()
    totals = []
    rng = random.Random(1)  # without the rounding step, about half of these folds lower a _sum
    for pid in range(3000, 3010):  # ten workers die, one after the other
        dead = ServerMetrics(lambda: None, PodMetrics(tmp_path, pid))
        _record(dead, [rng.random() * 0.3 for _ in range(3)])  # sums that round differently
        dead.flush()
        before = _samples(supervisor.render().decode(), "pineapple_http")
        assert supervisor.retire(pid)
        after = _samples(supervisor.render().decode(), "pineapple_http")
        assert after == pytest.approx(before, rel=1e-12)  # the same totals (sums: float order)
        assert all(after[k] >= v for k, v in before.items()), "a total went down"
        totals.append(after[("pineapple_http_requests_total", _EXECUTE_200)])
        assert not [p for p in tmp_path.iterdir() if str(pid) in p.name]
    assert totals == [3.0 + 2 * i for i in range(1, 11)]  # never backwards: 3 + 2 a death
    names = sorted(p.name for p in tmp_path.iterdir())
    live_files = [
        "counter_2000.db",
        "gauge_liveall_2000.db",
        "gauge_livemax_2000.db",  # build_info: the pod's, once
        "histogram_2000.db",
        "stats_2000.json",
    ]
    archive = ["counter_dead.db", "histogram_dead.db", "stats_dead.json"]
    assert names == sorted([".lock", *live_files, *archive])
    assert supervisor.stats()["http"]["requests_total"]["POST /execute 2xx"] == 3 + 20
    assert not supervisor.retire(3000)  # nothing left of it


_EXECUTE_200 = (("method", "POST"), ("route", "/execute"), ("status", "200"))


def test_a_fold_waits_for_a_scrape_that_is_reading(tmp_path: Path) -> None:
    pod = PodMetrics.create(tmp_path)
    dead = ServerMetrics(lambda: None, PodMetrics(tmp_path, 4000))
    _record(dead, [0.001])
    dead.flush()
    reading, release, folded = threading.Event(), threading.Event(), threading.Event()

    def scrape() -> None:
        with pod._locked(fcntl.LOCK_SH):
            reading.set()
            release.wait(10)

    def fold() -> None:
        pod.retire(4000)
        folded.set()

    scraper = threading.Thread(target=scrape)
    scraper.start()
    assert reading.wait(10)
    folder = threading.Thread(target=fold)
    folder.start()
    assert not folded.wait(0.3)  # held off by the reading scrape
    assert (tmp_path / "counter_4000.db").exists()
    release.set()
    assert folded.wait(10)
    scraper.join(10)
    folder.join(10)
    assert not (tmp_path / "counter_4000.db").exists()


def test_stats_sum_counts_and_keep_the_highest_of_a_highest() -> None:
    a = {"operators": {"x": {"exec_count": 3, "error_count": 1, "total_duration_ns": 400,
                             "max_duration_ns": 90, "avg_duration_ns": 100}},
         "server": {"reload_count": 1, "last_reload_duration_ns": 5}}  # fmt: skip
    b = {"operators": {"x": {"exec_count": 1, "error_count": 0, "total_duration_ns": 600,
                             "max_duration_ns": 300, "avg_duration_ns": 600}},
         "server": {"reload_count": 2, "last_reload_duration_ns": 3}}  # fmt: skip
    merged = merge_stats(a, b)
    assert merged["operators"]["x"] == {
        "exec_count": 4,
        "error_count": 1,
        "total_duration_ns": 1000,
        "max_duration_ns": 300,
        "avg_duration_ns": 200,
    }
    assert merged["server"] == {"reload_count": 3, "last_reload_duration_ns": 5}


def _status(name: str, type_: str, valid: str, ready: bool = True) -> ResourceStatus:
    conditions = (
        Condition("Ready", "True" if ready else "False"),
        Condition("Valid", valid),  # type: ignore[arg-type]
    )
    return ResourceStatus(name, type_, 600, 3, 1, 1.0, 2.0, None, 0, conditions)


def test_the_pods_state_shows_once_from_the_process_that_decides_it(tmp_path: Path) -> None:
    # The supervisor decides the shared "feed" and the config; each worker its own "redis".
    decided = {
        1000: Decided(lambda: [_status("feed", "feed_data", "False")],
                      lambda: ConfigState(7, "ab" * 32, 5.0)),
        1001: Decided(lambda: [_status("redis", "redis_connection", "True")], lambda: None),
        1002: Decided(lambda: [_status("redis", "redis_connection", "Unknown", ready=False)],
                      lambda: None),
    }  # fmt: skip
    pod = PodMetrics.create(tmp_path)
    processes = [
        ServerMetrics(lambda: None, PodMetrics(tmp_path, pid, decides=pid == 1000), state)
        for pid, state in decided.items()
    ]
    processes[0].observe_reload("error", 0.1)
    for process in processes:
        process.flush()
    families = {f.name: f for f in text_string_to_metric_families(pod.render().decode())}
    conditions = {
        (s.labels["resource"], s.labels["condition"], s.labels["status"]): s.value
        for s in families["pineapple_resource_condition"].samples
    }
    assert all("pid" not in s.labels for s in families["pineapple_resource_condition"].samples)
    assert conditions[("feed", "Valid", "False")] == 1.0
    assert conditions[("feed", "Valid", "True")] == 0.0
    # A per-worker resource: 1 for each status some worker has.
    assert conditions[("redis", "Valid", "True")] == 1.0
    assert conditions[("redis", "Valid", "Unknown")] == 1.0
    assert conditions[("redis", "Valid", "False")] == 0.0
    ready = {s.labels["resource"]: s.value for s in families["pineapple_resource_ready"].samples}
    assert ready == {"feed": 1.0, "redis": 0.0}  # the least ready worker
    (generation,) = families["pineapple_config_generation"].samples
    assert (generation.value, generation.labels) == (7.0, {"revision": "ab" * 6})
    (success,) = families["pineapple_config_last_reload_success"].samples
    assert success.value == 0.0
    (build,) = families["pineapple_build_info"].samples  # three processes, one series
    assert build.labels["server_compiled"] in ("true", "false")
