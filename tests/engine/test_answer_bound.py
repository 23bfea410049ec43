"""The answer's size bound (``_answer``): copies counted before they are made, 507 past it."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from pineapple import AnswerTooLargeError
from pineapple.engine import Engine
from pineapple.engine._answer import value_bytes
from pineapple.engine.http import STATUS_ANSWER_TOO_LARGE, respond

from ._configs import config, op

pytestmark = pytest.mark.timeout(60)


def _dispatch(type_name: str = "transform_dispatch", **params: Any) -> Engine:
    meta = {"common_input": ["blob"], "item_output": ["c"]}
    return Engine(
        config({"copy": op(type_name, meta=meta, **params)}, contract={"item_output": ["c"]})
    )


def _request(blob: Any, n: int) -> dict[str, Any]:
    return {"common": {"blob": blob}, "items": [{"id": i} for i in range(n)]}


def test_value_bytes_estimates_the_json_size() -> None:
    value = {"a": [1, "xyz", None, {"b": 2.5}], "c": True}
    encoded = len(orjson.dumps(value))
    assert encoded <= value_bytes(value) <= 2 * encoded  # numbers count 8 bytes
    assert value_bytes("x" * 60_000) == 60_002


def test_value_bytes_walks_a_shared_object_once() -> None:
    # t = {t, t} 60 deep: 2**60 leaves once encoded, 60 dicts to walk.
    t: Any = "leaf"
    for _ in range(60):
        t = [t, t]
    started = time.monotonic()
    assert value_bytes(t) > 2**60
    assert time.monotonic() - started < 0.5


def test_value_bytes_ends_on_a_cycle() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    cycle.append("x" * 100)
    assert 100 < value_bytes(cycle) < 200


@pytest.mark.parametrize(
    ("type_name", "params"),
    [("transform_dispatch", {}), ("transform_copy", {"direction": "common_to_item"})],
)
def test_a_copy_past_the_bound_stops_before_it_is_made(
    type_name: str, params: dict[str, Any]
) -> None:
    engine = _dispatch(type_name, **params)
    result = engine.run(None, _request("x" * 60_000, 3_500), max_answer_bytes=64 << 20)
    error = result.error
    assert isinstance(error, AnswerTooLargeError)
    assert error.operator == "copy"
    assert 'operator "copy" would make it about 210,035,000 bytes' in str(error)
    assert "more than the limit of 67,108,864 bytes" in str(error)
    assert all("c" not in item for item in result.items)  # nothing of the copy applied


def test_under_the_bound_and_without_one_the_copy_is_made() -> None:
    engine = _dispatch()
    small = engine.run(None, _request("x" * 100, 10), max_answer_bytes=64 << 20)
    assert small.error is None and [i["c"] for i in small.items] == ["x" * 100] * 10
    unbounded = engine.run(None, _request("x" * 60_000, 3_500))
    assert unbounded.error is None and len(unbounded.items) == 3_500


def test_copies_add_up_across_operators() -> None:
    # item -> common -> every item: the list of n values copied n times.
    engine = Engine(
        config(
            {
                "gather": op(
                    "transform_copy",
                    direction="item_to_common",
                    meta={"item_input": ["id"], "common_output": ["ids"]},
                ),
                "spread": op(
                    "transform_copy",
                    direction="common_to_item",
                    meta={"common_input": ["ids"], "item_output": ["all"]},
                ),
            },
            contract={"item_output": ["all"]},
        )
    )
    request = {"common": {}, "items": [{"id": i} for i in range(2_000)]}
    result = engine.run(None, request, max_answer_bytes=1 << 20)
    assert isinstance(result.error, AnswerTooLargeError)
    assert result.error.operator == "spread"


def test_respond_answers_507_without_a_partial_result() -> None:
    body = orjson.dumps(_request("x" * 4_000_000, 1_000))
    started = time.monotonic()
    status, answer = respond(_dispatch(), None, body, max_answer_bytes=64 << 20)
    assert time.monotonic() - started < 5.0
    assert status == STATUS_ANSWER_TOO_LARGE == 507
    assert orjson.loads(answer) == {
        "error": 'answer too large: operator "copy" would make it about 4,000,010,000 bytes, '
        "more than the limit of 67,108,864 bytes"
    }


def test_respond_measures_what_no_copy_counted() -> None:
    # Items passed through (no copy): the encoded answer is measured against the bound.
    engine = Engine(
        config(
            {"n": op("transform_size", meta={"common_output": ["n"]})},
            contract={"item_output": ["v"]},
        )
    )
    body = orjson.dumps({"common": {}, "items": [{"v": "y" * 1_000}] * 50})
    assert respond(engine, None, body, max_answer_bytes=1 << 20)[0] == 200
    status, answer = respond(engine, None, body, max_answer_bytes=10_000)
    assert status == 507
    assert orjson.loads(answer)["error"].startswith("answer too large: 50,")
