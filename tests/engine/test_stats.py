"""Per-operator counters of an Engine (``engine.stats``) and traces of ``run(trace=True)``."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pineapple import builtins
from pineapple.engine import Engine, EngineStats, _stats

OPS = builtins.operator_registry()

CONFIG: dict[str, Any] = {
    "pipeline_config": {
        "operators": {
            "recall": {
                "type_name": "recall_static",
                "items": [{"id": 1, "s": 1}],
                "$metadata": {"item_output": ["id", "s"]},
            },
            "size": {
                "type_name": "transform_size",
                "$metadata": {"common_input": ["_off"], "common_output": ["n"]},
                "skip": ["_off"],
            },
            "sort": {
                "type_name": "reorder_sort",
                "order": "desc",
                "$metadata": {"item_input": ["s"]},
            },
        }
    },
    "pipeline_group": {"main": {"pipeline": ["recall", "size", "sort"]}},
    "flow_contract": {"item_output": ["id"]},
}


def test_counts_are_exact_across_threads() -> None:
    engine = Engine(
        CONFIG, registry=OPS, time_every=3, timed_per_second=0
    )  # 0: sampling not capped
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait(10)
        for i in range(50):
            engine.execute(None, {"common": {"_off": i % 2 == 0}, "items": []})

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    totals = engine.stats.totals()  # the four threads have ended: their shards are folded
    ops = totals.operators
    assert (ops["recall"].exec_count, ops["size"].exec_count, ops["size"].skip_count) == (
        200,
        100,
        100,
    )
    assert (totals.runs, totals.dag_success, totals.dag_error) == (200, 200, 0)
    assert totals.executed.count == 200 and totals.executed.sum == 100 * 3 + 100 * 2
    # Durations are sampled: the first run of each thread, then one in three.
    assert 4 * 50 // 3 <= ops["recall"].durations.count <= 4 * (50 // 3 + 1)
    assert engine.stats.totals().operators["recall"].exec_count == 200  # folded once


def test_errors_are_counted_and_traced() -> None:
    config = {
        **CONFIG,
        "pipeline_config": {
            "operators": {
                **CONFIG["pipeline_config"]["operators"],
                "sort": {
                    "type_name": "transform_by_lua",
                    "lua_script": "function f() error('boom') end",
                    "function_for_item": "f",
                    "$metadata": {"item_input": ["s"], "item_output": ["t"]},
                },
            }
        },
    }
    engine = Engine(config, registry=OPS)
    result = engine.run(None, {"common": {"_off": True}, "items": []}, trace=True)
    assert result.error is not None and result.error.operator == "sort"
    assert result.trace is not None
    assert [(t.name, t.skipped) for t in result.trace] == [
        ("recall", False),
        ("size", True),
        ("sort", False),
    ]
    totals = engine.stats.totals()
    assert totals.operators["sort"].error_count == 1
    assert totals.operators["sort"].exec_count == 0
    assert (totals.dag_success, totals.dag_error) == (0, 1)
    assert totals.executed.sum == 1  # recall only: size skipped, sort failed


def test_no_trace_unless_asked() -> None:
    engine = Engine(CONFIG, registry=OPS)
    assert engine.run(None, {"common": {}, "items": []}).trace is None


def _lua_fail(when: str) -> dict[str, Any]:
    """CONFIG whose ``sort`` is a Lua transform that raises when ``when`` is set in common."""
    ops = dict(CONFIG["pipeline_config"]["operators"])
    ops["sort"] = {
        "type_name": "transform_by_lua",
        "lua_script": f"function f() if {when} then error('boom') end return 1 end",
        "function_for_item": "f",
        "$metadata": {"common_input": [when], "item_input": ["s"], "item_output": ["t"]},
    }
    return {**CONFIG, "pipeline_config": {"operators": ops}}


def _outcome(engine: Engine, common: dict[str, Any], trace: bool = False) -> tuple[Any, ...]:
    result = engine.run(None, {"common": common, "items": []}, trace=trace)
    error = None if result.error is None else (result.error.operator, str(result.error))
    return result.response(), result.warnings, error


def _counts(engine: Engine) -> tuple[Any, ...]:
    t = engine.stats.totals()
    ops = {n: (o.exec_count, o.skip_count, o.error_count) for n, o in t.operators.items()}
    return ops, t.runs, t.dag_success, t.dag_error, t.executed.counts, t.executed.sum


def test_plain_and_observed_loops_agree() -> None:
    """The plain run loop and the observed one (timed or traced runs) give the same
    responses, errors and counts, run for run."""
    commons: list[dict[str, Any]] = [
        {"_off": False, "_boom": False},
        {"_off": True, "_boom": False},
        {"_off": False, "_boom": True},
        {"_off": True, "_boom": True},
    ]
    plain = Engine(_lua_fail("_boom"), time_every=10**9)
    timed = Engine(_lua_fail("_boom"), time_every=1)
    traced = Engine(_lua_fail("_boom"), time_every=10**9)
    with plain, timed, traced:
        plain.run(None, {"common": commons[0], "items": []})  # a thread's first run is timed
        timed.run(None, {"common": commons[0], "items": []})
        traced.run(None, {"common": commons[0], "items": []})
        for common in commons * 3:
            expected = _outcome(plain, common)
            assert _outcome(timed, common) == expected
            assert _outcome(traced, common, trace=True) == expected
        assert _counts(plain) == _counts(timed) == _counts(traced)
        ops = plain.stats.totals().operators
        assert ops["sort"].error_count == 6 and ops["size"].skip_count == 6
        durations = timed.stats.totals().operators["recall"].durations.count
        assert durations == 13 and plain.stats.totals().operators["recall"].durations.count == 1


def test_deadline_before_an_operator_is_a_run_error_not_an_operator_error() -> None:
    engine = Engine(CONFIG, registry=OPS)
    from pineapple import Context

    result = engine.run(Context().with_deadline(0.0), {"common": {}, "items": []})
    assert result.error is not None and result.error.operator == "recall"
    totals = engine.stats.totals()
    assert totals.operators["recall"].error_count == 0
    assert (totals.runs, totals.dag_error, totals.executed.sum) == (1, 1, 0)


def test_stats_off_counts_nothing_and_answers_the_same() -> None:
    """``Engine(stats=False)``: the stats-free engine of the cost benchmark."""
    on, off = Engine(CONFIG, registry=OPS), Engine(CONFIG, registry=OPS, stats=False)
    for common in ({}, {"_off": True}):
        assert _outcome(off, common) == _outcome(on, common)
        assert _outcome(off, common, trace=True) == _outcome(on, common, trace=True)
    totals = off.stats.totals()
    assert totals.runs == 0 and totals.operators["recall"].exec_count == 0
    assert on.stats.totals().runs == 4


def _hammer(engine: Engine, runs: int, reader: Callable[[], None] | None = None) -> None:
    """Four threads, ``runs`` requests each (every other one skips ``size``), switching
    threads as often as CPython allows; ``reader`` (if any) runs beside them until they end."""
    barrier = threading.Barrier(5 if reader else 4)
    done = threading.Event()

    def work() -> None:
        barrier.wait(10)
        for i in range(runs):  # bounded: runs
            engine.execute(None, {"common": {"_off": i % 2 == 0}, "items": []})

    def read() -> None:
        assert reader is not None
        barrier.wait(10)
        while not done.is_set():  # bounded: the writers end after 4 * runs requests
            reader()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=work) for _ in range(4)]
    watcher = threading.Thread(target=read) if reader else None
    try:
        for t in [*threads, *([watcher] if watcher else [])]:
            t.start()
        for t in threads:
            t.join(60)
        done.set()
        if watcher:
            watcher.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads)


def test_counts_stay_exact_under_four_threads_switching_often() -> None:
    engine = Engine(CONFIG, registry=OPS, time_every=5, timed_per_second=0)
    _hammer(engine, 2000)
    totals = engine.stats.totals()
    ops = totals.operators
    assert (ops["recall"].exec_count, ops["sort"].exec_count) == (8000, 8000)
    assert (ops["size"].exec_count, ops["size"].skip_count) == (4000, 4000)
    assert (totals.runs, totals.dag_success, totals.executed.count) == (8000, 8000, 8000)
    assert totals.executed.sum == 4000 * 3 + 4000 * 2
    # The shared sampling countdown is unlocked: about one run in five is timed.
    assert 8000 // 5 // 2 <= ops["recall"].durations.count <= 8000 // 5 * 2


def test_a_reader_never_sees_a_count_go_down() -> None:
    """Each run is counted at once: a reader beside four writers sees every counter grow
    (never an irregular run's end without its skip, which would count an execution of
    the skipped operator and then take it back)."""
    engine = Engine(CONFIG, registry=OPS, time_every=10**9)
    last: dict[str, tuple[int, int]] = {}
    drops: list[str] = []

    def read() -> None:
        for name, op in engine.stats.totals().operators.items():
            now = (op.exec_count, op.skip_count)
            before = last.get(name, (0, 0))
            if now[0] < before[0] or now[1] < before[1]:
                drops.append(f"{name}: {before} -> {now}")
            last[name] = now

    _hammer(engine, 3000, read)
    assert drops == []
    assert engine.stats.totals().operators["size"].skip_count == 6000


def test_without_the_gil_regular_runs_count_per_thread() -> None:
    """The free-threaded fallback: ``done`` adds to the calling thread's shard."""
    stats = EngineStats(["a", "b"], [[0, 1]], gil=False)
    threads = [
        threading.Thread(target=lambda: [stats.done[0]() for _ in range(500)]) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    stats.irregular(0, 2, [1], -1, False)
    totals = stats.totals()
    assert totals.runs == 2001
    assert (totals.operators["a"].exec_count, totals.operators["b"].skip_count) == (2001, 1)


def test_timed_runs_are_capped_per_second(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(_stats, "_monotonic", lambda: now[0])
    engine = Engine(CONFIG, registry=OPS, time_every=2, timed_per_second=3)
    for _ in range(20):  # ten runs chosen by the ticker, three timed
        engine.execute(None, {"common": {}, "items": []})
    assert engine.stats.totals().operators["recall"].durations.count == 3
    now[0] = 101.0  # a new one-second window
    for _ in range(20):
        engine.execute(None, {"common": {}, "items": []})
    totals = engine.stats.totals()
    assert (totals.operators["recall"].durations.count, totals.runs) == (6, 40)
