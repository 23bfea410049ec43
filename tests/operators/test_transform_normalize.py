from __future__ import annotations

import orjson
import pytest

from pineapple import Context, RegistryError
from pineapple.engine import Engine
from pineapple.engine.http import respond

from ._run import run

META = {"item_input": ["s"], "item_output": ["n"]}


def test_min_max() -> None:
    out = run("transform_normalize", meta=META, items=[{"s": 10}, {"s": 20.0}, {"s": 15}])
    assert out.item_write_map() == {0: {"n": 0.0}, 1: {"n": 1.0}, 2: {"n": 0.5}}


def test_equal_values_give_zeros() -> None:
    out = run("transform_normalize", meta=META, items=[{"s": 3}, {"s": 3}])
    assert out.item_write_map() == {0: {"n": 0.0}, 1: {"n": 0.0}}


def test_non_numeric_names_item_field_and_type() -> None:
    with pytest.raises(
        TypeError, match=r"transform_normalize: item\[1\]\.s: cannot convert bool to float64"
    ):
        run("transform_normalize", meta=META, items=[{"s": 1}, {"s": True}])


def test_unknown_method() -> None:
    with pytest.raises(RegistryError, match="unsupported method"):
        run("transform_normalize", {"method": "z"}, META)


def _engine_config(meta: dict[str, list[str]]) -> dict[str, object]:
    full = {"common_input": [], "common_output": [], "item_input": [], "item_output": [], **meta}
    return {
        "pipeline_config": {
            "operators": {"norm": {"type_name": "transform_normalize", "$metadata": full}},
            "pipeline_map": {},
        },
        "pipeline_group": {"main": {"pipeline": ["norm"]}},
        "flow_contract": {
            "common_input": [],
            "common_output": [],
            "item_input": [],
            "item_output": ["s"],
        },
    }


@pytest.mark.parametrize("meta", [{"item_input": ["s"]}, {"item_output": ["n"]}, {}])
def test_missing_fields_build_and_answer_with_no_items(meta: dict[str, list[str]]) -> None:
    # As Go: only ``method`` is validated at init; with no items the request succeeds.
    with Engine(_engine_config(meta)) as engine:
        status, body = respond(engine, Context(), b'{"common": {}, "items": []}')
    assert (status, body) == (200, b'{"common":{},"items":[]}\n')


def test_missing_item_output_fails_a_request_with_items_naming_operator() -> None:
    with Engine(_engine_config({"item_input": ["s"]})) as engine:
        status, body = respond(engine, Context(), b'{"common": {}, "items": [{"s": 1}]}')
    assert status == 500
    assert orjson.loads(body)["error"] == (
        'pine: execution error in operator "norm": '
        "transform_normalize: $metadata.item_output needs one field"
    )


@pytest.mark.parametrize(
    ("values", "checked"),
    [
        ([1.0, 3.0, 2.0], True),
        ([1.0, float("nan"), 2.0], False),  # a NaN is scaled to a NaN: the engine names it
        ([-1e308, 1e308], False),  # the span overflows to infinity
        ([1.0, float("inf")], False),
    ],
)
def test_scaled_floats_are_promised_finite_only_when_they_are(
    values: list[float], checked: bool
) -> None:
    out = run("transform_normalize", meta=META, items=[{"s": v} for v in values])
    assert out.column_checked == [checked]
