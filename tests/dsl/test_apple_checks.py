"""Apple's validation tests, restated: our code, their cases (apple/tests/test_validator.py,
test_compiler.py, test_flow.py of Liam0205/pineapple). Each of Apple's refusals is ours too,
with a message naming the operator and the field."""

from __future__ import annotations

from typing import Any

import pytest

from dsl import Flow, SubFlow, ValidationError
from dsl.generated.resources import StaticResource


def lua(node: Flow | SubFlow, **kw: Any) -> None:
    """A transform_by_lua with only bookkeeping (Apple's ``_add_lua`` helper)."""
    item = bool(kw.get("item_input") or kw.get("item_output"))
    node._add_op(
        "transform_by_lua",
        lua_script="function f() return 0 end",
        function_for_common="" if item else "f",
        function_for_item="f" if item else "",
        **kw,
    )


Op = tuple[str, list[str], list[str], list[str], list[str]]
"""One compiled operator: ``(type, common_input, common_output, item_input, item_output)``."""


def compiled(flow: Flow) -> list[Op]:
    """``flow`` compiled (it passes every check): its main pipeline's operators in order,
    each sub-flow's inlined where the pipeline names it."""
    config = flow.compile_dict()
    operators = config["pipeline_config"]["operators"]
    subflows = config["pipeline_config"]["pipeline_map"]

    def expand(names: list[str]) -> list[Op]:
        out: list[Op] = []
        for name in names:  # bounded: the compiled pipeline
            if name in subflows:
                out.extend(expand(subflows[name]["pipeline"]))
                continue
            meta = operators[name]["$metadata"]
            out.append(
                (
                    operators[name]["type_name"],
                    meta["common_input"],
                    meta["common_output"],
                    meta["item_input"],
                    meta["item_output"],
                )
            )
        return out

    return expand(config["pipeline_group"]["main"]["pipeline"])


def refused(flow: Flow, pattern: str) -> str:
    with pytest.raises(ValidationError, match=pattern) as info:
        flow.compile_dict()
    return str(info.value)


# -- field coverage -------------------------------------------------------------------------


def test_missing_common_input_names_operator_and_field() -> None:
    flow = Flow(name="bad", common_input=[], common_output=["out"])
    lua(flow, common_input=["missing_field"], common_output=["out"], name="calc")
    refused(flow, r"operator 'calc': common_input field 'missing_field' not provided by flow")


def test_missing_item_input() -> None:
    flow = Flow(name="bad", item_input=[], item_output=["out"])
    lua(flow, item_input=["missing_item"], item_output=["out"])
    refused(flow, r"item_input field 'missing_item' not provided")


def test_upstream_output_satisfies_input() -> None:
    flow = Flow(name="chain", common_input=["x"], common_output=["z"])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_input=["y"], common_output=["z"])
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["y"], [], []),
        ("transform_by_lua", ["y"], ["z"], [], []),
    ]


def test_template_field_must_be_covered() -> None:
    flow = Flow(name="t", item_input=["x"], item_output=["x"])
    flow.transform_redis_set(resource_name="c", key_prefix="{{uid}}", item_input=["x"])
    flow.resource("c", StaticResource(value={}))
    refused(flow, r"common_input field 'uid' not provided")


# -- write without read ---------------------------------------------------------------------


def test_overwrite_without_read() -> None:
    flow = Flow(name="bad", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_output=["y"], name="again")
    refused(flow, r"operator 'again': writes common field 'y' without reading it")


def test_read_then_write_ok() -> None:
    flow = Flow(name="ok", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_input=["y"], common_output=["y"])
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["y"], [], []),
        ("transform_by_lua", ["y"], ["y"], [], []),
    ]


def test_if_else_branches_write_same_field_ok() -> None:
    flow = Flow(name="ok", common_input=["x"], common_output=["salt"])
    flow.if_("{{x}} ~= nil")
    lua(flow, common_input=["x"], common_output=["salt"])
    flow.else_()
    lua(flow, common_output=["salt"])
    flow.end_if_()
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["_if_1"], [], []),  # the condition
        ("transform_by_lua", ["x"], ["salt"], [], []),
        ("transform_by_lua", ["_if_1"], ["_else_2"], [], []),
        ("transform_by_lua", [], ["salt"], [], []),
    ]


def test_independent_if_blocks_write_same_field_rejected() -> None:
    flow = Flow(name="bad", common_input=["x"], common_output=["salt"])
    flow.if_("{{x}} == 1")
    lua(flow, common_input=["x"], common_output=["salt"])
    flow.end_if_().if_("{{x}} == 2")
    lua(flow, common_output=["salt"], name="second")
    flow.end_if_()
    refused(flow, r"operator 'second': writes common field 'salt'")


def test_nested_branch_write_same_field_ok() -> None:
    flow = Flow(name="ok", common_input=["x", "y"], common_output=["salt"])
    flow.if_("{{x}} ~= nil").if_("{{y}} ~= nil")
    lua(flow, common_input=["x", "y"], common_output=["salt"])
    flow.end_if_().else_()
    lua(flow, common_output=["salt"])
    flow.end_if_()
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["_if_1"], [], []),
        ("transform_by_lua", ["y"], ["_if_2"], [], []),
        ("transform_by_lua", ["x", "y"], ["salt"], [], []),
        ("transform_by_lua", ["_if_1"], ["_else_3"], [], []),  # the outer branch's else
        ("transform_by_lua", [], ["salt"], [], []),
    ]


def test_multiple_recalls_writing_same_field_ok() -> None:
    flow = Flow(name="multi", common_input=["q"], item_output=["item_id"], storage_mode="row")
    flow.recall_static(name="recall_a", items=[{"item_id": "1"}], item_output=["item_id"])
    flow.recall_static(name="recall_b", items=[{"item_id": "2"}], item_output=["item_id"])
    flow.merge_dedup(item_input=["item_id"], strategy="first")
    assert compiled(flow) == [
        ("recall_static", [], [], [], ["item_id"]),
        ("recall_static", [], [], [], ["item_id"]),
        ("merge_dedup", [], [], ["item_id"], []),
    ]


def test_write_without_read_includes_sub_flow_path() -> None:
    sf = SubFlow(name="process")
    lua(sf, common_input=["x"], common_output=["y"])
    lua(sf, common_output=["y"])
    refused(Flow(name="t", common_input=["x"], sub_flows=[sf], skip_dead_code=True), r"\[process\]")


# -- dead operators -------------------------------------------------------------------------


def test_dead_operator() -> None:
    flow = Flow(name="dead", common_input=["x"], common_output=["y"], item_output=[])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["z"], name="unused")
    refused(flow, r"operator 'unused': dead operator .*\['z'\]")


def test_dead_code_detected_even_without_output_contract() -> None:
    flow = Flow(name="dead", common_input=["x"])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["z"])
    refused(flow, "dead operator")


def test_observe_op_not_dead_code() -> None:
    flow = Flow(name="observe_ok", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"])
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["y"], [], []),
        ("transform_by_lua", ["x"], [], [], []),  # kept: it writes nothing, so it only observes
    ]


def test_skip_dead_code_turns_the_check_off() -> None:
    flow = Flow(name="dead", common_input=["x"], skip_dead_code=True)
    lua(flow, common_input=["x"], common_output=["y"])
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["y"], [], [])
    ]  # dead, and compiled all the same


# -- control flow (call-time errors are ValueErrors) ------------------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda f: f.elseif_("{{x}} > 0"), "without a matching if_"),
        (lambda f: f.else_(), "without a matching if_"),
        (lambda f: f.end_if_(), "without a matching if_"),
        (lambda f: f.if_(""), "non-empty"),
        (lambda f: f.if_("   "), "non-empty"),
        (lambda f: f.if_("{{x}} ~= nil").end_if_(), "has no operators"),
    ],
)
def test_malformed_control_flow_is_a_value_error(call: Any, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        call(Flow(name="bad", common_input=["x"]))


def test_empty_else_elseif_after_else_and_duplicate_else() -> None:
    flow = Flow(name="bad", common_input=["x", "y"], common_output=["z"])
    flow.if_("{{x}} ~= nil")
    lua(flow, common_input=["x"], common_output=["z"])
    flow.else_()
    with pytest.raises(ValueError, match=r"else_.* has no operators"):
        flow.end_if_()
    lua(flow, common_input=["x"], common_output=["z"])
    with pytest.raises(ValueError, match=r"elseif_\(\) after the else_\(\)"):
        flow.elseif_("{{y}} ~= nil")  # named as the user called it
    with pytest.raises(ValueError, match=r"else_\(\) after the else_\(\)"):
        flow.else_()


def test_unclosed_if_in_sub_flow_raises() -> None:
    sf = SubFlow(name="bad_sub")
    sf.if_("true")
    lua(sf, common_output=["y"])
    flow = Flow(name="main", common_input=["x"], common_output=["y"], sub_flows=[sf])
    refused(flow, r"sub-flow 'bad_sub': if_\('true'\) is not closed")


def test_sub_flow_names_reject_separators_where_placed() -> None:
    # As in Apple: SubFlow(...) takes the name; add_subflow() refuses it.
    for name, separator in (("a/b", "/"), ("a::b", "::")):
        sub_flow = SubFlow(name=name)
        with pytest.raises(
            ValueError, match=f"SubFlow name {name!r} must not contain '{separator}'"
        ):
            Flow(name="main").add_subflow(sub_flow)
        with pytest.raises(ValueError, match=f"must not contain '{separator}'"):
            Flow(name="main", sub_flows=[sub_flow])


def test_invalid_storage_mode_rejected() -> None:
    with pytest.raises(ValueError, match="invalid storage_mode='raw'"):
        Flow(name="x", storage_mode="raw")


# -- '_' outputs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("contract", "op", "pattern"),
    [
        (
            {"common_output": ["_x"]},
            {"common_output": ["_x"]},
            r"flow common_output.*'_x'.*reserved",
        ),
        ({"item_output": ["_y"]}, {"item_output": ["_y"]}, r"flow item_output.*'_y'.*reserved"),
        ({"common_output": ["y"]}, {"common_output": ["_bad"]}, r"'op'.*'_bad'.*reserved"),
        ({"item_output": ["y"]}, {"item_output": ["_bad"]}, r"'op'.*'_bad'.*reserved"),
    ],
)
def test_underscore_outputs_rejected(contract: Any, op: Any, pattern: str) -> None:
    flow = Flow(name="bad", common_input=["x"], skip_dead_code=True, **contract)
    lua(flow, common_input=["x"], name="op", **op)
    refused(flow, pattern)


def test_underscore_input_and_control_outputs_allowed() -> None:
    flow = Flow(name="ok", common_input=["_source", "x"], common_output=["y"])
    flow.if_("{{x}} ~= nil")
    lua(flow, common_input=["_source", "x"], common_output=["y"])
    flow.end_if_()
    assert compiled(flow) == [
        ("transform_by_lua", ["x"], ["_if_1"], [], []),
        ("transform_by_lua", ["_source", "x"], ["y"], [], []),
    ]


# -- data_parallel ----------------------------------------------------------------------------


def test_transform_data_parallel_ok_and_written() -> None:
    flow = Flow(name="ok", common_input=["x"], item_input=["a"], item_output=["b"])
    lua(flow, common_input=["x"], item_input=["a"], item_output=["b"], data_parallel=4, name="p")
    assert flow.compile_dict()["pipeline_config"]["operators"]["p"]["data_parallel"] == 4


def test_non_transform_data_parallel_rejected() -> None:
    flow = Flow(name="bad", item_output=["item_id"])
    flow._add_op(
        "recall_static", item_output=["item_id"], items=[{"item_id": "a"}], data_parallel=2
    )
    refused(flow, r"data_parallel=2 is only supported for Transform.*'recall_static'")


def test_data_parallel_with_common_output_rejected() -> None:
    flow = Flow(name="bad", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"], data_parallel=2, name="p")
    refused(flow, r"operator 'p': data_parallel=2 requires empty common_output")


@pytest.mark.parametrize("n", [0, 1])
def test_data_parallel_zero_or_one_not_checked(n: int) -> None:
    flow = Flow(name="ok", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"], data_parallel=n)
    assert compiled(flow) == [("transform_by_lua", ["x"], ["y"], [], [])]


# -- params and metadata ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item_input", "item_output", "pattern"),
    [
        ([], ["feat"], r"param 'lookup_key'='item_id' must appear in item_input"),
        (["item_id"], [], r"param 'output_field'='feat' must appear in item_output"),
    ],
)
def test_resource_lookup_metadata(item_input: Any, item_output: Any, pattern: str) -> None:
    flow = Flow(name="bad", item_input=["item_id"], item_output=["feat"], skip_dead_code=True)
    flow.resource("res", StaticResource(value={}))
    flow.transform_resource_lookup(
        resource_name="res",
        lookup_key="item_id",
        output_field="feat",
        item_input=item_input,
        item_output=item_output,
    )
    refused(flow, pattern)


@pytest.mark.parametrize("param", ["ttl", "key_prefix", "fail_on_error"])
def test_explicit_none_for_scalar_param_rejected(param: str) -> None:
    flow = Flow(name="n", common_input=["uid"], item_input=["x"], item_output=["x"])
    flow.resource("cache", StaticResource(value={}))
    kw: dict[str, Any] = {"key_prefix": "{{uid}}", param: None}
    flow.transform_redis_set(resource_name="cache", item_input=["x"], **kw)
    refused(flow, rf"param '{param}' is explicitly None")


def test_explicit_none_for_any_param_is_written_as_null() -> None:
    flow = Flow(name="ok", item_input=["score"], item_output=["score"])
    flow.filter_condition(item_input=["score"], value=None, name="drop_nil")
    assert flow.compile_dict()["pipeline_config"]["operators"]["drop_nil"]["value"] is None


def test_nested_template_marker_rejected() -> None:
    flow = Flow(name="n", common_input=["uid"], item_output=["k"])
    flow.recall_static(items=[{"k": "{{uid}}"}], item_output=["k"], name="r")
    refused(flow, r"operator 'r'.*param 'items' contains a nested \{\{field\}\} marker at \[0\]")


# -- sources ----------------------------------------------------------------------------------


def test_sources_forward_and_missing_references() -> None:
    flow = Flow(name="bad", common_input=["x"], common_output=["y"])
    lua(flow, common_input=["x"], common_output=["y"], sources=["future_op"])
    lua(flow, common_input=["y"], common_output=["y"], name="future_op", sources=["ghost"])
    message = refused(flow, "forward reference")
    assert "source 'ghost' is not an operator of the flow" in message


# -- SubFlow contracts ------------------------------------------------------------------------


def test_sub_flow_required_resource_missing() -> None:
    sf = SubFlow(name="needs_feed", required_resources=["feed_data"])
    lua(sf, item_input=["x"], item_output=["y"])
    refused(
        Flow(name="p", item_input=["x"], item_output=["y"], sub_flows=[sf]),
        r"SubFlow 'needs_feed' requires resource 'feed_data'",
    )


def test_sub_flow_input_contract_missing_field() -> None:
    sf = SubFlow(name="sf", item_input=["x"])
    lua(sf, item_input=["y"], item_output=["z"], name="reader")
    flow = Flow(name="p", item_input=["x", "y"], item_output=["z"], sub_flows=[sf])
    refused(
        flow,
        r"operator 'reader' \[sf\]: item_input field 'y' not provided by SubFlow 'sf' contract",
    )


def test_sub_flow_input_contract_satisfied_internally() -> None:
    sf = SubFlow(name="sf", item_input=["x"], item_output=["z"])
    lua(sf, item_input=["x"], item_output=["mid"])
    lua(sf, item_input=["mid"], item_output=["z"])
    flow = Flow(name="p", item_input=["x"], item_output=["z"], sub_flows=[sf])
    assert compiled(flow) == [
        ("transform_by_lua", [], [], ["x"], ["mid"]),
        ("transform_by_lua", [], [], ["mid"], ["z"]),
    ]


def test_nested_sub_flow_inherits_outer_contract() -> None:
    inner = SubFlow(name="inner")
    lua(inner, item_input=["bad"], item_output=["z"])
    outer = SubFlow(name="outer", item_input=["x"], item_output=["z"]).add_subflow(inner)
    flow = Flow(name="p", item_input=["x", "bad"], item_output=["z"], sub_flows=[outer])
    refused(
        flow, r"\[outer/inner\]: item_input field 'bad' not provided by SubFlow 'outer' contract"
    )


def test_sub_flow_output_contract_dead_operator() -> None:
    sf = SubFlow(name="sf", item_input=["x"], item_output=["z"])
    lua(sf, item_input=["x"], item_output=["z"])
    lua(sf, item_input=["x"], item_output=["extra"], name="dead_op")
    flow = Flow(name="p", item_input=["x"], item_output=["z", "extra"], sub_flows=[sf])
    refused(flow, r"SubFlow 'sf': operator 'dead_op' \[sf\]: dead operator")
    flow.skip_dead_code = True
    assert compiled(flow) == [
        ("transform_by_lua", [], [], ["x"], ["z"]),
        ("transform_by_lua", [], [], ["x"], ["extra"]),  # dead, kept with the check off
    ]


def test_sub_flow_contract_ignores_control_fields_but_checks_real_ones() -> None:
    sf = SubFlow(name="sf", common_input=["enabled"], item_input=["x"], item_output=["x"])
    sf.if_("{{enabled}} ~= nil")
    lua(sf, item_input=["x"], item_output=["x"])
    sf.end_if_()
    flow = Flow(
        name="p", common_input=["enabled"], item_input=["x"], item_output=["x"], sub_flows=[sf]
    )
    assert compiled(flow) == [
        ("transform_by_lua", ["enabled"], ["_sf::if_1"], [], []),  # scoped to the sub-flow
        ("transform_by_lua", [], [], ["x"], ["x"]),
    ]
    bad = SubFlow(name="sf", common_input=["enabled"], item_input=["x"], item_output=["x"])
    bad.if_("{{enabled}} ~= nil")
    lua(bad, common_input=["secret"], item_input=["x"], item_output=["x"])
    bad.end_if_()
    flow = Flow(
        name="p",
        common_input=["enabled", "secret"],
        item_input=["x"],
        item_output=["x"],
        sub_flows=[bad],
    )
    refused(flow, r"common_input field 'secret' not provided by SubFlow 'sf'")


def test_sub_flow_without_contract_is_not_checked() -> None:
    sf = SubFlow(name="sf")
    lua(sf, item_input=["external_x"], item_output=["z"])
    flow = Flow(name="p", item_input=["external_x"], item_output=["z"], sub_flows=[sf])
    assert compiled(flow) == [("transform_by_lua", [], [], ["external_x"], ["z"])]


# -- every problem at once --------------------------------------------------------------------


def test_all_problems_are_reported_together() -> None:
    flow = Flow(name="bad", common_input=[], common_output=["_x"])
    lua(flow, common_input=["missing"], common_output=["out"])
    with pytest.raises(ValidationError) as info:
        flow.compile_dict()
    problems = info.value.problems
    assert any("'missing' not provided" in p for p in problems)
    assert any("flow common_output field '_x'" in p for p in problems)
    assert any("dead operator" in p for p in problems)
