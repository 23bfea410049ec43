"""Per-operator counters of an Engine (``engine.stats``) and traces of ``run(trace=True)``."""

from __future__ import annotations

import threading
from typing import Any

from pineapple import builtins
from pineapple.engine import Engine

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
    engine = Engine(CONFIG, registry=builtins.operator_registry(), time_every=3)
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
    engine = Engine(config, registry=builtins.operator_registry())
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
    engine = Engine(CONFIG, registry=builtins.operator_registry())
    assert engine.run(None, {"common": {}, "items": []}).trace is None
