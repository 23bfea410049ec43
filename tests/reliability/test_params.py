"""Issue 11, item 8: parameters have ranges; the refresh scheduler never dies quietly.

``interval``: 0 (the type's default), -1 (never) or 1 s .. 30 days, else a
ConfigError naming the resource and the param, in ``pineapple check`` and at
load. Timeouts of 0 or below are refused the same way. A fetcher's error
(even a ``BaseException``) never stops refreshing; if the timer thread dies
anyway, every resource shows ``Fresh=False`` and ``/readyz`` answers 503.
"""

from __future__ import annotations

import random
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pineapple import ConfigError
from pineapple.resource import Manager
from pineapple.resource._scheduler import Scheduler
from tests.server.fakes import unified_config

from ._files import LimitedServe, file_config, poll, run_check, write_config

WAIT = 20.0  # seconds: generous bound for anything below that takes ~1-2 s

BAD_INTERVALS = [1e10, 1e-300, 0.5, timedelta(days=31).total_seconds()]


def _table(tmp_path: Path) -> str:
    data = tmp_path / "t.json"
    data.write_text('[{"id": "a", "tag": "t"}]')
    return str(data)


@pytest.mark.e2e
@pytest.mark.parametrize("interval", BAD_INTERVALS)
def test_check_refuses_an_interval_out_of_range(tmp_path: Path, interval: float) -> None:
    config = write_config(tmp_path, file_config("json", _table(tmp_path), interval=interval))
    done = run_check(config, fetch=False)
    assert done.returncode == 1, done.stdout
    assert "resource 'table': interval must be 0" in done.stderr, done.stderr
    assert "between 1 and 2.592e+06 seconds (30 days)" in done.stderr


@pytest.mark.e2e
def test_serve_refuses_to_load_a_1e10_interval(tmp_path: Path) -> None:
    config = write_config(tmp_path, file_config("json", _table(tmp_path), interval=1e10))
    serve = LimitedServe(config)
    try:
        assert not serve.url, "served a config whose refresh timer cannot wait"
        assert serve.wait_exit() == 1
        assert "resource 'table': interval must be" in serve.text()
    finally:
        serve.close()


@pytest.mark.e2e
@pytest.mark.parametrize("param", ["connect_timeout_ms", "read_timeout_ms"])
@pytest.mark.parametrize("value", [0, -5])
def test_check_refuses_feed_data_timeouts_of_zero_or_below(
    tmp_path: Path, param: str, value: int
) -> None:
    params = {"sqlite_path": str(tmp_path / "feed.db"), param: value}
    config = unified_config("t", resources={"feed": {"type": "feed_data", "params": params}})
    done = run_check(write_config(tmp_path, config), fetch=False)
    assert done.returncode == 1, done.stdout
    assert "resource 'feed'" in done.stderr, done.stderr
    assert f"parameter '{param}': must be > 0 milliseconds, got {value}" in done.stderr


def test_register_takes_the_same_range() -> None:
    rm = Manager()
    bad_values: list[float] = [*BAD_INTERVALS, float("nan"), float("inf"), -2]
    for bad in bad_values:
        with pytest.raises(ConfigError, match=r"resource 'r': interval must be"):
            rm.register("r", dict, interval=bad)
    good_values: list[float | timedelta] = [0, -1, 1, timedelta(days=30)]
    for i, good in enumerate(good_values):
        rm.register(f"ok{i}", dict, interval=good)
    assert [s.interval for s in rm.status()] == [600.0, -1.0, 1.0, 2592000.0]


@pytest.mark.parametrize("error", [SystemExit, KeyboardInterrupt])
def test_a_fetcher_raising_a_base_exception_does_not_stop_its_refreshes(
    error: type[BaseException],
) -> None:
    calls: list[int] = []
    third = threading.Event()

    def fetch() -> int:
        calls.append(len(calls) + 1)
        if len(calls) == 2:
            raise error("from the fetcher")
        if len(calls) == 3:
            third.set()
        return len(calls)

    rm = Manager(jitter=0, backoff_base=0.05)
    rm.register("r", fetch, interval=1)
    rm.start()
    try:
        assert third.wait(WAIT), "the refresh after the failed one never ran"
        status = rm.status_of("r")
        assert status.version == 2 and status.last_error is None
    finally:
        rm.stop()


def test_backoff_after_thousands_of_failures_does_not_overflow() -> None:
    rm = Manager(backoff_cap=60)
    rm.register("r", dict, interval=-1)
    slot = rm._slots["r"]
    slot.consecutive_failures = 5000  # 2.0 ** 4999 would overflow
    assert rm._next_delay(slot) == 60


@pytest.mark.parametrize(
    ("interval_is_max", "low", "high"), [(False, 9.0, 11.0), (True, 9.0, 10.0)]
)
def test_the_jitter_only_shortens_an_interval_that_is_a_maximum(
    interval_is_max: bool, low: float, high: float
) -> None:
    """``interval_is_max`` (a fleet producer's): every refresh is due within ``-jitter`` of
    its interval, never later; by default within ``±jitter``, both sides reached."""
    rm = Manager(jitter=0.1, interval_is_max=interval_is_max)
    rm.register("r", dict, interval=10)
    slot = rm._slots["r"]
    rm._backoff._rng = random.Random(7)  # the same draws every run
    delays = [rm._next_delay(slot) or 0.0 for _ in range(2000)]
    assert low <= min(delays) < low + 0.05 and high - 0.05 < max(delays) <= high


def test_the_timer_survives_a_delay_beyond_what_a_thread_can_wait() -> None:
    scheduler = Scheduler("t", workers=1)
    ran = [threading.Event(), threading.Event()]
    try:
        scheduler.call_later(1e12, lambda: None)  # far beyond threading.TIMEOUT_MAX
        scheduler.call_later(0, ran[0].set)
        assert ran[0].wait(WAIT)
        scheduler.call_later(0, ran[1].set)  # after the timer went back to waiting
        assert ran[1].wait(WAIT), "the timer thread died"
        assert scheduler.failure is None
    finally:
        scheduler.stop()


@pytest.mark.e2e
def test_a_dead_timer_shows_fresh_false_and_readyz_503(tmp_path: Path) -> None:
    resources: dict[str, Any] = {
        "breaker": {"type": "test_timer_breaker", "interval": 1, "params": {}},
        "table": {"type": "json_file", "interval": 60, "params": {"path": _table(tmp_path)}},
    }
    config = write_config(tmp_path, unified_config("t", resources=resources))
    serve = LimitedServe(config, "tests.reliability._params")
    try:
        assert serve.get("/readyz").status_code == 200, serve.text()
        down = poll("/readyz to answer 503", lambda: serve.get("/readyz").status_code == 503, WAIT)
        assert down
        body = serve.get("/readyz").json()
        assert body["status"] == "refresh stopped"
        assert "timer thread died: RuntimeError: the heap was broken by the test" in body["reason"]
        statuses = serve.get("/resources").json()["resources"]
        assert {s["name"] for s in statuses} == {"breaker", "table"}
        for status in statuses:
            fresh = next(c for c in status["conditions"] if c["type"] == "Fresh")
            assert (fresh["status"], fresh["reason"]) == ("False", "RefreshStopped")
            assert "timer thread died" in fresh["message"]
        assert serve.get("/healthz").status_code == 200  # values are still served
    finally:
        serve.close()
