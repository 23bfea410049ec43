from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from pineapple import resource
from pineapple.resource import (
    NOT_MODIFIED,
    DuplicateRegistrationError,
    Manager,
    ManagerStateError,
    RefreshError,
    StartError,
    UnknownResourceError,
)

from ._values import Closable, CountingFetcher


def started(**fetchers: CountingFetcher) -> Manager:
    rm = Manager(jitter=0)
    for name, fetcher in fetchers.items():
        rm.register(name, fetcher, interval=-1)
    rm.start()
    return rm


def test_get_borrows_the_current_value() -> None:
    rm = started(a=CountingFetcher())
    handle = rm.get("a")
    assert handle is not None
    with handle as value:
        assert value.payload == 1
    rm.stop()


def test_get_returns_none_for_unknown_not_loaded_and_stopped() -> None:
    rm = Manager()
    rm.register("a", CountingFetcher(), interval=-1)
    assert rm.get("nope") is None
    assert rm.get("a") is None  # not loaded yet
    rm.start()
    assert rm.get("nope") is None
    rm.stop()
    assert rm.get("a") is None


def test_register_after_start_and_double_start_raise() -> None:
    rm = started(a=CountingFetcher())
    with pytest.raises(ManagerStateError):
        rm.register("b", CountingFetcher())
    with pytest.raises(ManagerStateError):
        rm.start()
    rm.stop()
    with pytest.raises(ManagerStateError):
        rm.start()


def test_duplicate_name_raises() -> None:
    rm = Manager()
    rm.register("a", CountingFetcher())
    with pytest.raises(DuplicateRegistrationError, match="'a'"):
        rm.register("a", CountingFetcher())


def test_names_are_sorted() -> None:
    rm = Manager()
    for name in ("zeta", "alpha", "mid"):
        rm.register(name, CountingFetcher())
    assert rm.names() == ["alpha", "mid", "zeta"]


def test_interval_accepts_timedelta_and_resolves_zero_to_default() -> None:
    rm = Manager()
    rm.register("a", CountingFetcher(), interval=timedelta(minutes=5))
    rm.register("b", CountingFetcher(), interval=0)
    rm.register("c", CountingFetcher(), interval=-1)
    assert [s.interval for s in rm.status()] == [300.0, 600.0, -1.0]


def test_refresh_swaps_and_closes_the_old_value_after_its_last_borrow() -> None:
    fetcher = CountingFetcher()
    rm = started(a=fetcher)
    old = rm.get("a")
    assert old is not None
    assert rm.refresh("a") == "swapped"
    resource.lowlevel.flush_closes()
    assert fetcher.made[0].closes == 0  # still borrowed
    with rm.get("a") as value:  # type: ignore[union-attr]
        assert value.payload == 2
    assert old.value.use() == 1
    old.release()
    resource.lowlevel.flush_closes()
    assert fetcher.made[0].closes == 1
    assert fetcher.made[0].used_after_close == 0
    assert rm.status_of("a").version == 2
    rm.stop()


def test_refresh_failure_keeps_the_previous_value() -> None:
    fetcher = CountingFetcher()
    rm = started(a=fetcher)
    fetcher.fail_with = ConnectionError("db down")
    with pytest.raises(RefreshError, match="db down"):
        rm.refresh("a")
    with pytest.raises(RefreshError):
        rm.refresh("a")
    with rm.get("a") as value:  # type: ignore[union-attr]
        assert value.payload == 1
    status = rm.status_of("a")
    assert status.version == 1
    assert status.consecutive_failures == 2
    assert status.last_error == "ConnectionError: db down"
    assert status.ready
    fetcher.fail_with = None
    assert rm.refresh("a") == "swapped"
    status = rm.status_of("a")
    assert (status.consecutive_failures, status.last_error, status.version) == (0, None, 2)
    rm.stop()


def test_not_modified_keeps_the_value_without_a_swap() -> None:
    values = iter([Closable("v1"), NOT_MODIFIED])
    rm = Manager()
    rm.register("a", lambda: next(values), interval=-1)
    rm.start()
    first = rm.get("a")
    assert first is not None
    original = first.value
    first.release()
    assert rm.refresh("a") == "not_modified"
    with rm.get("a") as value:  # type: ignore[union-attr]
        assert value is original
    assert rm.status_of("a").version == 1
    rm.stop()


def test_not_modified_before_any_value_is_a_failure() -> None:
    rm = Manager()
    rm.register("a", lambda: NOT_MODIFIED, interval=-1)
    with pytest.raises(StartError, match="NOT_MODIFIED"):
        rm.start()


def test_value_borrowed_across_many_refreshes_is_closed_once_after_release() -> None:
    fetcher = CountingFetcher()
    rm = started(a=fetcher)
    handle = rm.get("a")
    assert handle is not None
    for _ in range(50):
        rm.refresh("a")
    resource.lowlevel.flush_closes()
    first = fetcher.made[0]
    assert first.closes == 0
    # every intermediate value, never borrowed, was closed exactly once
    assert [v.closes for v in fetcher.made[1:-1]] == [1] * 49
    assert handle.value.use() == 1
    handle.release()
    resource.lowlevel.flush_closes()
    assert first.closes == 1
    assert first.used_after_close == 0
    rm.stop()
    assert [v.closes for v in fetcher.made] == [1] * 51


def test_stop_with_a_live_borrow_defers_close() -> None:
    fetcher = CountingFetcher()
    rm = started(a=fetcher)
    handle = rm.get("a")
    assert handle is not None
    rm.stop()
    value = fetcher.made[0]
    assert value.closes == 0
    assert value.use() == 1
    handle.release()
    resource.lowlevel.flush_closes()
    assert value.closes == 1
    assert value.used_after_close == 0


def test_stop_without_borrows_closes_at_once_and_closes_the_fetcher() -> None:
    fetcher = CountingFetcher()
    rm = started(a=fetcher)
    rm.stop()
    assert fetcher.made[0].closes == 1  # stop waits for the closes it caused
    assert fetcher.closed == 1
    rm.stop()  # idempotent
    assert fetcher.made[0].closes == 1
    assert fetcher.closed == 1


def test_start_error_names_every_failure_and_stops_the_manager() -> None:
    good, bad1, bad2 = CountingFetcher(), CountingFetcher(), CountingFetcher()
    bad1.fail_with = ValueError("no such table feed")
    bad2.fail_with = TimeoutError("redis did not answer")
    rm = Manager()
    for name, f in (("good", good), ("bad1", bad1), ("bad2", bad2)):
        rm.register(name, f, interval=-1)
    with pytest.raises(StartError) as info:
        rm.start()
    assert set(info.value.failures) == {"bad1", "bad2"}
    assert "no such table feed" in str(info.value)
    assert "redis did not answer" in str(info.value)
    assert rm.state == "stopped"
    assert good.made[0].closes == 1  # nothing half-started is left behind
    assert rm.get("good") is None


def test_start_timeout_names_the_slow_resource_and_drops_its_late_value() -> None:
    release = threading.Event()
    late = Closable("late")

    def slow() -> Closable:
        release.wait(10)
        return late

    rm = Manager()
    rm.register("slow", slow, interval=-1)
    rm.register("fast", CountingFetcher(), interval=-1)
    with pytest.raises(StartError, match=r"'slow': first fetch timed out after 0.2s"):
        rm.start(timeout=0.2)
    release.set()
    deadline = time.monotonic() + 5
    while late.closes == 0 and time.monotonic() < deadline:
        resource.lowlevel.flush_closes(timeout=0.1)
    assert late.closes == 1


def test_allow_partial_serves_the_rest_and_retries_the_failed() -> None:
    bad = CountingFetcher()
    bad.fail_with = OSError("down")
    rm = Manager(backoff_base=0.01, backoff_cap=0.02)
    rm.register("good", CountingFetcher(), interval=-1)
    rm.register("bad", bad, interval=-1)
    rm.start(allow_partial=True)
    assert rm.get("good") is not None
    assert rm.get("bad") is None
    bad.fetched.clear()
    bad.fail_with = None
    assert bad.fetched.wait(5)  # the retry ran (backoff, not the -1 interval)
    deadline = time.monotonic() + 5
    while rm.get("bad") is None and time.monotonic() < deadline:
        bad.fetched.clear()
        bad.fetched.wait(0.5)
    handle = rm.get("bad")
    assert handle is not None
    handle.release()
    rm.stop()


def test_scheduled_refresh_runs_on_a_refresh_thread() -> None:
    threads: list[str] = []
    done = threading.Event()

    def fetch() -> int:
        threads.append(threading.current_thread().name)
        if len(threads) >= 3:
            done.set()
        return len(threads)

    rm = Manager(jitter=0, min_interval=0.01)
    rm.register("a", fetch, interval=0.01)
    rm.start()
    assert done.wait(5)
    rm.stop()
    assert all(name.startswith("pineapple-refresh") for name in threads)


def test_failed_scheduled_refreshes_back_off_and_show_in_status() -> None:
    fetcher = CountingFetcher()
    rm = Manager(jitter=0, backoff_base=0.01, backoff_cap=0.04, min_interval=0.01)
    rm.register("a", fetcher, interval=0.01)
    rm.start()
    fetcher.fail_with = ConnectionError("refused")
    deadline = time.monotonic() + 5
    while rm.status_of("a").consecutive_failures < 3 and time.monotonic() < deadline:
        fetcher.fetched.clear()
        fetcher.fetched.wait(0.5)
    status = rm.status_of("a")
    rm.stop()
    assert status.consecutive_failures >= 3
    assert status.last_error == "ConnectionError: refused"
    assert status.version == 1


def test_fresh_condition_flips_when_the_value_is_older_than_twice_the_interval() -> None:
    rm = Manager()
    rm.register("a", CountingFetcher(), interval=100)
    rm.start()
    loaded = rm.status_of("a").loaded_at
    assert loaded is not None
    fresh = rm.status_of("a", now=loaded + 150).condition("Fresh")
    assert fresh is not None and fresh.status == "True"
    stale = rm.status_of("a", now=loaded + 201).condition("Fresh")
    assert stale is not None and stale.status == "False" and stale.reason == "Stale"
    again = rm.status_of("a", now=loaded + 250).condition("Fresh")
    assert again is not None
    assert again.last_transition_time == stale.last_transition_time  # no flip, no change
    rm.stop()


def test_ready_condition_reports_a_failed_first_load() -> None:
    bad = CountingFetcher()
    bad.fail_with = OSError("nope")
    rm = Manager(backoff_base=60)
    rm.register("bad", bad, interval=-1)
    rm.start(allow_partial=True)
    ready = rm.status_of("bad").condition("Ready")
    assert ready is not None
    assert (ready.status, ready.reason) == ("False", "FetchFailed")
    rm.stop()
    stopped = rm.status_of("bad").condition("Ready")
    assert stopped is not None and stopped.reason == "Stopped"


def test_stale_is_dated_when_the_age_passed_the_limit_not_when_it_is_read() -> None:
    rm = Manager()
    rm.register("a", CountingFetcher(), interval=100)
    rm.start()
    loaded = rm.status_of("a").loaded_at
    assert loaded is not None
    stale = rm.status_of("a", now=loaded + 500).condition("Fresh")
    rm.stop()
    assert stale is not None and stale.reason == "Stale"
    assert stale.last_transition_time == loaded + 200  # twice the interval after loading


def test_conditions_are_dated_at_the_change_even_when_read_later() -> None:
    fetcher = CountingFetcher()
    fetcher.fail_with = OSError("nope")
    rm = Manager(backoff_base=60)
    rm.register("a", fetcher, interval=-1)
    rm.start(allow_partial=True)
    failed_at = rm.status_of("a", now=1e12).last_attempt_at  # read "much later"
    fetcher.fail_with = None
    rm.refresh("a")
    rm.pin("a")
    status = rm.status_of("a", now=1e12)
    rm.stop()
    ready, pinned = status.condition("Ready"), status.condition("Pinned")
    assert failed_at is not None and ready is not None and pinned is not None
    # Ready=False was dated by the failed fetch (read first at 1e12), then flipped True
    # at the swap: the very clock read that set loaded_at.
    assert ready.status == "True" and ready.last_transition_time == status.loaded_at
    assert status.loaded_at is not None and failed_at < status.loaded_at
    assert pinned.status == "True"
    assert status.loaded_at <= (pinned.last_transition_time or 0) < 1e12


def test_refresh_of_unknown_or_stopped_raises() -> None:
    rm = started(a=CountingFetcher())
    with pytest.raises(UnknownResourceError):
        rm.refresh("b")
    rm.stop()
    with pytest.raises(ManagerStateError):
        rm.refresh("a")


def test_describe_uses_the_default_printer() -> None:
    rm = Manager()
    rm.register("a", lambda: {"k": [1, 2]}, interval=-1, type_name="static")
    rm.start()
    assert rm.status_of("a").summary == "static/a"
    description = rm.describe("a")
    assert description is not None and '"k"' in description
    rm.stop()


def test_metrics_observe_every_fetch() -> None:
    seen: list[tuple[str, str, str]] = []

    class Recorder:
        def observe_refresh(self, name: str, type_name: str, result: str, seconds: float) -> None:
            assert seconds >= 0
            seen.append((name, type_name, result))

    fetcher = CountingFetcher()
    rm = Manager(metrics=Recorder())
    rm.register("a", fetcher, interval=-1, type_name="t")
    rm.start()
    fetcher.fail_with = OSError("x")
    with pytest.raises(RefreshError):
        rm.refresh("a")
    rm.stop()
    assert seen == [("a", "t", "swapped"), ("a", "t", "error")]


def test_register_with_carry_over_shares_the_value_of_the_same_fetcher() -> None:
    fetcher = CountingFetcher()
    old = Manager()
    old.register("hand", fetcher, interval=-1, owns_fetcher=False)
    old.start()
    new = Manager()
    new.register("hand", fetcher, interval=-1, owns_fetcher=False, carry_over=old)
    other = CountingFetcher()
    new.register("other", other, interval=-1, carry_over=old)
    new.start()
    assert fetcher.calls == 1  # shared, not fetched again
    old.stop()
    assert fetcher.closed == 0  # not owned: stop leaves the fetcher open
    with new.get("hand") as value:  # type: ignore[union-attr]
        assert value is fetcher.made[0]
        assert value.closes == 0
    new.stop()
    assert fetcher.made[0].closes == 1
    assert (fetcher.closed, other.closed) == (0, 1)


def test_register_carry_over_needs_the_same_fetcher_object() -> None:
    old = Manager()
    old.register("r", CountingFetcher(), interval=-1)
    old.start()
    fresh = CountingFetcher()
    new = Manager()
    new.register("r", fresh, interval=-1, carry_over=old)
    new.start()
    assert fresh.calls == 1
    old.stop()
    new.stop()
