"""keep_previous, rollback, pin and unpin on the Manager."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pineapple import ParamSpec
from pineapple.resource import (
    Manager,
    NoPreviousValueError,
    PinnedError,
    ResourceSchema,
    ValidationRefusedError,
)
from pineapple.resource import Registry as ResourceRegistry
from pineapple.resource.lowlevel import flush_closes

from ._scripted import Rows, Scripted, rows


def _served(rm: Manager) -> Any:
    handle = rm.get("feed")
    assert handle is not None
    with handle as value:
        return value


def _pinned(rm: Manager) -> str:
    cond = rm.status_of("feed").condition("Pinned")
    assert cond is not None
    return cond.status


def test_rollback_serves_the_previous_value_without_a_fetch_and_pins() -> None:
    good, bad = rows(3, "good"), rows(3, "bad")
    fetcher = Scripted(good, bad)
    rm = Manager(jitter=0)
    rm.register("feed", fetcher, interval=-1, keep_previous=True)
    rm.start()
    assert rm.refresh("feed") == "swapped"
    assert _served(rm) is bad and rm.status_of("feed").has_previous
    calls = fetcher.calls
    version = rm.rollback("feed")
    assert _served(rm) is good
    assert fetcher.calls == calls  # no fetch
    assert version == 3 and not rm.status_of("feed").has_previous
    assert _pinned(rm) == "True"
    assert fetcher.resumed_with[-1] is good  # change detection resumes from what is served
    flush_closes(5)
    assert bad.closes == 1 and good.closes == 0
    with pytest.raises(NoPreviousValueError, match="none kept yet"):
        rm.rollback("feed")
    rm.stop()


def test_rollback_needs_keep_previous() -> None:
    rm = Manager()
    rm.register("feed", Scripted(rows(1), rows(2)), interval=-1)
    rm.start()
    rm.refresh("feed")
    with pytest.raises(NoPreviousValueError, match="keep_previous is off"):
        rm.rollback("feed")
    rm.stop()


def test_keep_previous_retires_the_one_before() -> None:
    a, b, c = rows(1, "a"), rows(1, "b"), rows(1, "c")
    rm = Manager()
    rm.register("feed", Scripted(a, b, c), interval=-1, keep_previous=True)
    rm.start()
    rm.refresh("feed")
    rm.refresh("feed")
    flush_closes(5)
    assert (a.closes, b.closes, c.closes) == (1, 0, 0)
    rm.stop()
    flush_closes(5)
    assert (b.closes, c.closes) == (1, 1)  # stop drops the kept previous value too


def test_a_pinned_resource_refuses_admin_refreshes_and_skips_timed_ones() -> None:
    fetcher = Scripted(rows(1, "first"), rows(2, "second"))
    rm = Manager()
    rm.register("feed", fetcher, interval=-1)
    rm.start()
    rm.pin("feed")
    assert _pinned(rm) == "True"
    with pytest.raises(PinnedError, match=r"'feed' is pinned .*unpin"):
        rm.refresh("feed")
    rm._scheduled_refresh(rm._slots["feed"])  # what the timer runs
    assert fetcher.calls == 1
    assert rm.unpin("feed") and not rm.unpin("feed")
    assert rm.refresh("feed") == "swapped"
    assert _served(rm).tag == "second"
    rm.stop()


def test_a_pin_that_lands_during_a_fetch_wins() -> None:
    late = rows(2, "late")
    fetcher = Scripted(rows(1, "first"), late)
    rm = Manager()
    rm.register("feed", fetcher, interval=-1)
    rm.start()
    fetcher.gate, fetcher.entered = threading.Event(), threading.Event()
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(rm._fetch(rm._slots["feed"])))
    worker.start()
    assert fetcher.entered.wait(5)
    rm.pin("feed")
    fetcher.gate.set()
    worker.join(5)
    assert not worker.is_alive() and results == ["not_modified"]
    assert _served(rm).tag == "first"
    flush_closes(5)
    assert late.closes == 1
    rm.stop()


def test_pin_and_previous_survive_a_reload_that_keeps_the_entry() -> None:
    made: list[Rows] = []

    def factory(params: dict[str, Any]) -> Scripted:
        value = rows(params["n"], f"n{params['n']}-{len(made)}")
        made.append(value)
        return Scripted(value, rows(params["n"], "next"))

    reg = ResourceRegistry()
    reg.register(ResourceSchema(name="t", params={"n": ParamSpec(type="int")}), factory)

    def config(n: int) -> dict[str, Any]:
        entry = {"type": "t", "params": {"n": n}, "interval": -1, "keep_previous": True}
        return {"resource_config": {"feed": entry}}

    old = Manager(reg)
    old.load_from_root_config(config(1))
    old.start()
    old.refresh("feed")
    old.pin("feed")
    same = Manager(reg)
    same.load_from_root_config(config(1), carry_over=old)
    same.start()
    old.stop()
    assert _pinned(same) == "True" and same.status_of("feed").has_previous
    same.rollback("feed")
    assert _served(same) is made[0]
    changed = Manager(reg)
    changed.load_from_root_config(config(2), carry_over=same)
    changed.start()
    same.stop()
    cond = changed.status_of("feed").condition("Pinned")
    assert cond is not None and cond.status == "False"  # a changed entry starts unpinned
    changed.stop()


def test_restore_serves_a_given_value_pinned_whatever_pin_it_had() -> None:
    fetched, kept = rows(3, "fetched"), rows(2, "kept")
    fetcher = Scripted(fetched, rows(1, "later"))
    rm = Manager(jitter=0)
    rm.register("feed", fetcher, interval=-1)
    rm.start()
    rm.pin("feed", reason="an admin's")
    version = rm.restore("feed", kept, "kept across a restart")
    assert version == 2 and _served(rm) is kept
    cond = rm.status_of("feed").condition("Pinned")
    assert cond is not None and cond.message == "kept across a restart"
    assert fetcher.resumed_with[-1] is kept  # change detection resumes from it
    with pytest.raises(PinnedError):
        rm.refresh("feed")
    flush_closes(5)
    assert fetched.closes == 1 and kept.closes == 0
    rm.stop()


def test_a_replay_check_refuses_a_refreshed_value_like_a_validator() -> None:
    first, failing, forced = rows(2, "first"), rows(2, "failing"), rows(2, "forced")
    registry = ResourceRegistry()
    schema = ResourceSchema(name="scripted", description="test", default_interval=-1, params={})
    registry.register(schema, lambda params: Scripted(first, failing, forced))
    rm = Manager(registry, jitter=0)
    rm.load_from_root_config(
        {"resource_config": {"feed": {"type": "scripted", "interval": -1, "replay": True}}}
    )
    checked: list[Any] = []

    def check(name: str, value: Any) -> None:
        checked.append(value)
        if value is not first:
            raise ValueError(f"{name}: failed 1 of 1 replayed requests")

    rm.set_replay(check)
    rm.start()
    assert checked == []  # a first load replays nothing
    with pytest.raises(ValidationRefusedError, match="refused by replay: feed: failed 1 of 1"):
        rm.refresh("feed")
    assert _served(rm) is first and checked == [failing]
    valid = rm.status_of("feed").condition("Valid")
    assert valid is not None and valid.status == "False" and "replay" in valid.message
    assert rm.refresh("feed", force=True) == "swapped"  # an admin overrides it
    assert _served(rm) is forced
    rm.stop()
