from __future__ import annotations

import time

import pytest

from pineapple import Context, DeadlineExceededError, RegistryError
from pineapple.engine import Engine, build_operator
from pineapple.operators.transform_bench_sleep import MAX_DELAY_MS

from ._run import run


def _config(delay_ms: int) -> dict[str, object]:
    return {
        "pipeline_config": {
            "operators": {
                "nap": {"type_name": "transform_bench_sleep", "delay_ms": delay_ms},
            }
        },
        "pipeline_group": {"main": {"pipeline": ["nap"]}},
        "flow_contract": {"item_input": ["id"], "item_output": ["id", "_bench_slept"]},
    }


def test_sleeps_then_marks_every_item_slept() -> None:
    start = time.monotonic()
    out = Engine(_config(20)).execute(Context(), {"common": {}, "items": [{"id": 1}, {"id": 2}]})
    assert time.monotonic() - start >= 0.02
    assert out["items"] == [{"id": 1, "_bench_slept": True}, {"id": 2, "_bench_slept": True}]


def test_no_items_no_writes() -> None:
    out = run("transform_bench_sleep", {"delay_ms": 0})
    assert out.column_writes is None and out.item_writes is None


def test_the_deadline_cuts_the_sleep() -> None:
    ctx = Context().with_timeout(0.05)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="transform_bench_sleep"):
        run("transform_bench_sleep", {"delay_ms": MAX_DELAY_MS}, items=[{"id": 1}], ctx=ctx)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("delay", [MAX_DELAY_MS + 1, "5", True])
def test_a_delay_past_the_bound_or_not_an_int_is_refused(delay: object) -> None:
    with pytest.raises(RegistryError, match="delay_ms"):
        build_operator("transform_bench_sleep", {"delay_ms": delay}, {})
