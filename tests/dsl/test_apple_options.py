"""Every option Apple can write, and Apple's spellings (issue 16, items 2 and 3)."""

from __future__ import annotations

import pytest

import pineapple
from dsl import Flow, SubFlow, ValidationError
from pineapple.engine import Engine


def strict_flow() -> Flow:
    flow = Flow(
        "opts",
        common_input=["uid"],
        item_input=["score"],
        item_output=["score", "norm"],
        storage_mode="column",
        log_prefix="[opts] ",
        debug=True,
    )
    flow.transform_by_lua(
        name="double",
        lua_script="function f() return score * 2 end",
        function_for_item="f",
        function_for_common="",
        common_input=["uid"],
        item_input=["score"],
        item_output=["norm"],
        strict_common=["uid"],
        strict_item=["score"],
        data_parallel=2,
        debug=True,
    )
    return flow


def test_typed_methods_take_the_per_operator_options() -> None:
    config = strict_flow().compile_dict()
    op = config["pipeline_config"]["operators"]["double"]
    assert op["strict_common"] == ["uid"]
    assert op["strict_item"] == ["score"]
    assert op["data_parallel"] == 2
    assert op["debug"] is True


def test_flow_options_are_written_at_the_top_level() -> None:
    config = strict_flow().compile_dict()
    assert config["storage_mode"] == "column"
    assert config["log_prefix"] == "[opts] "
    assert config["debug"] is True
    plain = Flow("p", item_input=["s"], item_output=["s"]).reorder_sort(item_input=["s"])
    assert not {"storage_mode", "log_prefix", "debug"} & set(plain.compile_dict())


def test_the_engine_runs_the_options() -> None:
    engine = Engine(strict_flow().compile_dict())
    try:
        out = engine.execute(pineapple.Context(), {"common": {"uid": 1}, "items": [{"score": 2}]})
        assert out["items"] == [{"score": 2, "norm": 4}]
        with pytest.raises(pineapple.PineappleError, match="uid"):
            engine.execute(pineapple.Context(), {"common": {}, "items": [{"score": 2}]})
    finally:
        engine.close()


def test_add_operator_takes_the_options_as_keywords() -> None:
    flow = Flow("a", item_input=["x"], item_output=["x"])
    flow.add_operator(
        "reorder_sort", {"order": "asc"}, item_input=["x"], strict_item=["x"], name="s"
    )
    assert flow.compile_dict()["pipeline_config"]["operators"]["s"]["strict_item"] == ["x"]


def test_explicit_none_reaches_the_engine_as_null() -> None:
    flow = Flow("nil", item_input=["tag"], item_output=["tag"])
    flow.filter_condition(item_input=["tag"], value=None, name="drop_nil")
    engine = Engine(flow.compile_dict())
    try:
        req = {"common": {}, "items": [{"tag": None}, {"tag": "a"}]}
        out = engine.execute(pineapple.Context(), req)
        assert out["items"] == [{"tag": "a"}]
    finally:
        engine.close()


def test_apple_spellings() -> None:
    sf = SubFlow("stage", None, None, ["x"], ["x"], None)  # Apple's positional order
    sf._add_op("reorder_sort", item_input=["x"], order="desc", recall=False, name="")
    flow = Flow("apple", [], ["x"], [], ["x"], [sf])
    config = flow.compile_dict()
    assert config["pipeline_group"]["main"]["pipeline"] == ["stage"]
    (op,) = config["pipeline_config"]["operators"].values()
    assert op["order"] == "desc" and "recall" not in op
    with pytest.raises(ValidationError, match="consumes_row_set must be a bool"):
        flow._add_op("reorder_sort", consumes_row_set="yes")


def test_elseif_control_operators_are_named_like_apples() -> None:
    flow = Flow("b", common_input=["t"], item_input=["x"], item_output=["x"])
    flow.if_("{{t}} == 1").reorder_sort(item_input=["x"], name="a")
    flow.elif_("{{t}} == 2").reorder_sort(item_input=["x"], name="b")
    flow.elseif_("{{t}} == 3").reorder_sort(item_input=["x"], name="c").end_if_()
    ops = flow.compile_dict()["pipeline_config"]["operators"]
    assert ops["elseif_2"]["$metadata"]["common_output"] == ["_elif_2"]
    assert ops["elseif_3"]["$metadata"]["common_output"] == ["_elif_3"]
    sub = SubFlow("s").if_("{{t}} == 1").reorder_sort(item_input=["x"], name="d")
    sub.elseif_("{{t}} == 2").reorder_sort(item_input=["x"], name="e").end_if_()
    ops = Flow("c", common_input=["t"], item_input=["x"], item_output=["x"], sub_flows=[sub])
    sub_ops = ops.compile_dict()["pipeline_config"]["operators"]
    assert sub_ops["s::elseif_2"]["$metadata"]["common_output"] == ["_s::elseif_2"]


def test_call_time_errors_are_value_errors() -> None:
    assert issubclass(ValidationError, ValueError)
    assert issubclass(ValidationError, pineapple.ValidationError)
    with pytest.raises(ValueError, match="data_parallel"):
        Flow("f").reorder_sort(data_parallel=-1)
