"""if_/elif_/else_/end_if_: the compiled JSON shape and the compile-time checks."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from dsl import Flow, SubFlow, ValidationError, compile_flow, compile_json
from dsl._condition import condition_fields

FIXED_TIME = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def ops_of(config: dict[str, Any]) -> dict[str, Any]:
    ops: dict[str, Any] = config["pipeline_config"]["operators"]
    return ops


def label(flow: Flow | SubFlow, name: str, value: str, **kw: Any) -> None:
    """An item operator writing ``label = value`` (what a branch does in these tests)."""
    flow.transform_by_lua(
        name=name,
        lua_script=f'function f() return "{value}" end',
        function_for_item="f",
        item_output=["label"],
        **kw,
    )


def tiered_with() -> Flow:
    flow = Flow("tiers", common_input=["tier"], item_output=["label"])
    with flow.if_("tier == 'vip'"):
        label(flow, "vip", "vip")
    with flow.elif_("{{tier}} == 'new'"):
        label(flow, "new", "new")
    with flow.else_():
        label(flow, "other", "other")
    flow.filter_truncate(name="cut", top_n=2)
    return flow


def tiered_apple() -> Flow:
    flow = Flow("tiers", common_input=["tier"], item_output=["label"])
    flow.if_("tier == 'vip'")
    label(flow, "vip", "vip")
    flow.elseif_("{{tier}} == 'new'")
    label(flow, "new", "new")
    flow.else_()
    label(flow, "other", "other")
    flow.end_if_().filter_truncate(name="cut", top_n=2)
    return flow


def test_if_elif_else_compiles_to_control_operators_and_skip_guards() -> None:
    config = compile_flow(tiered_with(), created_at=FIXED_TIME)
    assert config["pipeline_group"]["main"]["pipeline"] == [
        "if_1",
        "vip",
        "elseif_2",
        "new",
        "else_3",
        "other",
        "cut",
    ]
    ops = ops_of(config)
    assert ops["if_1"] == {
        "type_name": "transform_by_lua",
        "$metadata": {
            "common_input": ["tier"],
            "common_output": ["_if_1"],
            "item_input": [],
            "item_output": [],
        },
        "$code_info": "[if] tier == 'vip'",  # Apple's text for a control operator
        "for_branch_control": True,
        "lua_script": (
            "function evaluate() if (tier == 'vip') then return false else return true end end"
        ),
        "function_for_item": "",
        "function_for_common": "evaluate",
    }
    assert ops["elseif_2"]["$metadata"]["common_input"] == ["_if_1", "tier"]
    assert ops["elseif_2"]["$metadata"]["common_output"] == ["_elif_2"]
    assert ops["elseif_2"]["lua_script"] == (
        "function evaluate() if ((_if_1)) and (tier == 'new') "
        "then return false else return true end end"
    )
    assert ops["else_3"]["$metadata"]["common_input"] == ["_if_1", "_elif_2"]
    assert ops["else_3"]["lua_script"] == (
        "function evaluate() if ((_if_1) and (_elif_2)) then return false else return true end end"
    )
    for name, field in (("vip", "_if_1"), ("new", "_elif_2"), ("other", "_else_3")):
        assert ops[name]["skip"] == [field]
        assert ops[name]["$metadata"]["common_input_skip"] == [field]
        assert "for_branch_control" not in ops[name]
    assert "skip" not in ops["cut"]
    assert not any("skip" in ops[n] for n in ("if_1", "elseif_2", "else_3"))


def _without_locations(text: str) -> str:
    """The config text without ``$code_info`` lines (the two flows sit on other lines)."""
    return "".join(line for line in text.splitlines(True) if '"$code_info": "tests/' not in line)


def test_apple_call_shape_compiles_to_the_same_bytes_as_with_blocks() -> None:
    a = compile_json(tiered_with(), created_at=FIXED_TIME)
    b = compile_json(tiered_apple(), created_at=FIXED_TIME)
    assert _without_locations(a) == _without_locations(b)
    assert a == compile_json(tiered_with(), created_at=FIXED_TIME)


def test_calls_chain_like_apple() -> None:
    flow = Flow("f", common_input=["on"])
    flow.if_("{{on}}").filter_truncate(name="t", top_n=1).end_if_().filter_truncate(top_n=3)
    ops = ops_of(compile_flow(flow))
    assert ops["t"]["skip"] == ["_if_1"]
    names = list(ops)
    assert names[:2] == ["if_1", "t"]
    assert "skip" not in ops[names[2]]


def test_nested_blocks_guard_inner_control_operators_and_bodies() -> None:
    flow = Flow("n", common_input=["a", "b"], item_output=["label"])
    with flow.if_("a > 0"):
        with flow.if_("b > 0"):
            label(flow, "both", "both")
        with flow.else_():
            label(flow, "a_only", "a_only")
        label(flow, "after_inner", "x", item_input=["label"])
    with flow.else_():
        label(flow, "none", "none")
    ops = ops_of(compile_flow(flow))
    assert list(ops) == [
        "if_1",
        "if_2",
        "both",
        "else_3",
        "a_only",
        "after_inner",
        "else_4",
        "none",
    ]
    assert ops["if_2"]["skip"] == ["_if_1"]
    assert ops["else_3"]["skip"] == ["_if_1"]
    assert ops["else_3"]["$metadata"]["common_input"] == ["_if_2"]
    assert ops["both"]["skip"] == ["_if_1", "_if_2"]
    assert ops["a_only"]["skip"] == ["_if_1", "_else_3"]
    assert ops["after_inner"]["skip"] == ["_if_1"]
    assert ops["else_4"]["$metadata"]["common_input"] == ["_if_1"]
    assert "skip" not in ops["else_4"]
    assert ops["none"]["skip"] == ["_else_4"]


def test_sub_flow_fields_are_prefixed_by_path_and_parent_guards_inherited() -> None:
    inner = SubFlow("inner")
    with inner.if_("b > 0"):
        label(inner, "deep", "deep")
    outer = SubFlow("outer").add_subflow(inner)
    flow = Flow("f", common_input=["a", "b"], item_output=["label"])
    with flow.if_("a > 0"):
        flow.add_subflow(outer)
    with flow.else_():
        label(flow, "top", "top")
    config = compile_flow(flow)
    ops = ops_of(config)
    assert config["pipeline_config"]["pipeline_map"]["outer/inner"]["pipeline"] == [
        "outer::inner::if_1",
        "deep",
    ]
    ctrl = ops["outer::inner::if_1"]
    assert ctrl["$metadata"]["common_output"] == ["_outer::inner::if_1"]
    assert ctrl["skip"] == ["_if_1"]
    # Apple's order: the sub-flow's own guard first, then the inherited one
    assert ops["deep"]["skip"] == ["_outer::inner::if_1", "_if_1"]


def test_sub_flow_prior_fields_use_lua_global_table_syntax() -> None:
    sub = SubFlow("s")
    with sub.if_("a > 0"):
        label(sub, "x", "x")
    with sub.else_():
        label(sub, "y", "y")
    flow = Flow("f", common_input=["a"], item_output=["label"]).add_subflow(sub)
    ops = ops_of(compile_flow(flow))
    assert ops["s::else_2"]["lua_script"] == (
        'function evaluate() if ((_G["_s::if_1"])) then return false else return true end end'
    )


def test_skip_when_and_branches_combine_in_declaration_order() -> None:
    flow = Flow("f", common_input=["a", "_off"], item_output=["label"])
    with flow.skip_when("_off"), flow.if_("a > 0"):
        label(flow, "x", "x")
    ops = ops_of(compile_flow(flow))
    assert ops["if_1"]["skip"] == ["_off"]
    assert ops["x"]["skip"] == ["_off", "_if_1"]


def test_condition_may_read_a_field_written_by_an_earlier_operator() -> None:
    flow = Flow("f", common_input=["x"], item_output=["label"])
    flow.transform_by_lua(
        lua_script="function g() return x * 2 end",
        function_for_common="g",
        common_input=["x"],
        common_output=["doubled"],
    )
    with flow.if_("doubled > math.floor(10.5) and tostring(x) ~= 'nil'"):
        label(flow, "big", "big")
    ops = ops_of(compile_flow(flow))
    assert ops["if_1"]["$metadata"]["common_input"] == ["doubled", "x"]


@pytest.mark.parametrize(
    ("condition", "fields"),
    [
        ("score > 50", ["score"]),
        ("{{score}} > {{limit}}", ["score", "limit"]),
        ("a and not b or a", ["a", "b"]),
        ("string.len(name) > 3 and s:upper() == 'X'", ["name", "s"]),
        ("tier == 'vip' or tier == \"a b\" or tag == [[long c]]", ["tier", "tag"]),
        ("x ~= nil and x.y == 1e5 and n >= 0x1F", ["x", "n"]),
        ("({k = v})[1] == nil -- comment z", ["v"]),
        ("(a .. b) == 'ab'", ["a", "b"]),
        ("_if_1 and _G['x'] == nil", ["_if_1"]),
    ],
)
def test_condition_fields(condition: str, fields: list[str]) -> None:
    assert condition_fields(condition) == fields


# -- errors ------------------------------------------------------------------


def test_continuations_without_if_are_named() -> None:
    flow = Flow("f")
    with pytest.raises(ValidationError, match=r"flow 'f': elif_\(\) without a matching if_\(\)"):
        flow.elif_("a")
    with pytest.raises(ValidationError, match=r"else_\(\) without a matching if_\(\)"):
        flow.else_()
    with pytest.raises(ValidationError, match=r"end_if_\(\) without a matching if_\(\)"):
        flow.end_if_()
    with pytest.raises(ValidationError, match=r"sub-flow 's': else_\(\) without"):
        SubFlow("s").else_()


def test_elif_or_second_else_after_else_is_rejected() -> None:
    flow = Flow("f", common_input=["a"])
    flow.if_("a").filter_truncate(top_n=1).else_().filter_truncate(top_n=2)
    with pytest.raises(ValidationError, match=r"elif_\(\) after the else_\(\) of if_\('a'\)"):
        flow.elif_("a")
    with pytest.raises(ValidationError, match=r"else_\(\) after the else_\(\)"):
        flow.else_()


def test_empty_branches_are_rejected() -> None:
    flow = Flow("f", common_input=["a"])
    flow.if_("a > 1")
    with pytest.raises(ValidationError, match=r"the if_\('a > 1'\) branch has no operators"):
        flow.else_()
    flow2 = Flow("g", common_input=["a"])
    with flow2.if_("a"):
        flow2.filter_truncate(top_n=1)
    with (
        pytest.raises(ValidationError, match=r"the else_\(\) branch of if_\('a'\) has no"),
        flow2.else_(),
    ):
        pass


def test_unclosed_block_is_reported_at_compile() -> None:
    sub = SubFlow("s")
    sub.if_("a > 1").filter_truncate(top_n=1)
    flow = Flow("f", common_input=["a"]).add_subflow(sub)
    flow.if_("{{a}} == 2").filter_truncate(top_n=2)
    with pytest.raises(ValidationError) as info:
        compile_flow(flow)
    assert info.value.problems[:2] == [
        "flow 'f': if_('{{a}} == 2') is not closed: add end_if_() (or write `with flow.if_(...):`)",
        "sub-flow 's': if_('a > 1') is not closed: add end_if_() (or write `with flow.if_(...):`)",
    ]


def test_with_blocks_and_calls_do_not_mix() -> None:
    flow = Flow("f", common_input=["a"])
    with flow.if_("a"):
        flow.filter_truncate(top_n=1)
    flow.else_()  # a with-block continues only with `with`
    with pytest.raises(ValidationError, match=r"must be written `with flow.else_\(\):`"):
        flow.filter_truncate(top_n=2)

    flow2 = Flow("g", common_input=["a"])
    flow2.if_("a").filter_truncate(top_n=1)
    with (
        pytest.raises(ValidationError, match=r"opened without `with`.*end_if_\(\)"),
        flow2.else_(),
    ):
        pass


def test_continuation_inside_with_body_is_rejected() -> None:
    flow = Flow("f", common_input=["a"])
    with flow.if_("a"):
        flow.filter_truncate(top_n=1)
        with pytest.raises(ValidationError, match=r"else_\(\) inside the `with flow.if_\('a'\)`"):
            flow.else_()
        with pytest.raises(ValidationError, match=r"end_if_\(\) inside the `with"):
            flow.end_if_()


def test_if_left_open_inside_a_with_block_or_skip_when_is_rejected() -> None:
    flow = Flow("f", common_input=["a", "b", "_x"])
    with (
        pytest.raises(ValidationError, match=r"if_\('b'\) opened inside a `with` block"),
        flow.if_("a"),
    ):
        flow.if_("b").filter_truncate(top_n=1)
    flow2 = Flow("g", common_input=["a", "_x"])
    with (
        pytest.raises(ValidationError, match=r"if_\('a'\) opened inside skip_when\(\) is not"),
        flow2.skip_when("_x"),
    ):
        flow2.if_("a").filter_truncate(top_n=1)
    flow3 = Flow("h", common_input=["a", "_x"])
    flow3.if_("a").filter_truncate(top_n=1)
    with (
        pytest.raises(ValidationError, match=r"inside a skip_when\(\) block cannot continue"),
        flow3.skip_when("_x"),
    ):
        flow3.else_()


def test_a_flow_alone_is_not_a_context_manager() -> None:
    flow = Flow("f")
    with pytest.raises(ValidationError, match="not a context manager by itself"), flow:
        pass


def test_explicit_end_if_after_a_with_block_is_allowed() -> None:
    flow = Flow("f", common_input=["a"])
    with flow.if_("a"):
        flow.filter_truncate(name="t", top_n=1)
    flow.end_if_()
    with pytest.raises(ValidationError, match=r"end_if_\(\) without a matching if_\(\)"):
        flow.end_if_()
    assert ops_of(compile_flow(flow))["t"]["skip"] == ["_if_1"]


@pytest.mark.parametrize("condition", ["", "   ", None, 3])
def test_condition_must_be_a_non_empty_string(condition: Any) -> None:
    with pytest.raises(ValidationError, match=r"flow 'f': if_\(\): the condition must be"):
        Flow("f").if_(condition)


@pytest.mark.parametrize(
    "condition", ["a >", "a = 1", "a) then os.exit() end if (b", "'open", "return a"]
)
def test_condition_must_be_a_lua_expression(condition: str) -> None:
    with pytest.raises(ValidationError, match="is not a Lua expression"):
        Flow("f", common_input=["a"]).if_(condition)
    flow = Flow("g", common_input=["a"]).if_("a").filter_truncate(top_n=1)
    with pytest.raises(ValidationError, match=r"flow 'g': elif_\(\): the condition"):
        flow.elif_(condition)


def test_undeclared_condition_fields_are_named() -> None:
    flow = Flow("f", common_input=["score"], item_input=["price"])
    with flow.if_("scroe > 50 and {{price}} > 1"):
        flow.filter_truncate(top_n=1)
    with pytest.raises(ValidationError) as info:
        compile_flow(flow)
    assert info.value.problems == [
        "control operator 'if_1' (if_('scroe > 50 and {{price}} > 1')) reads common field "
        "'scroe', which is neither in the flow's common_input nor written (common_output) by "
        "an earlier operator",
        "control operator 'if_1' (if_('scroe > 50 and {{price}} > 1')) reads 'price', an item "
        "field; a condition reads common fields (compute one with an operator's common_output "
        "first)",
    ]


def test_condition_field_written_only_later_is_undeclared() -> None:
    sub = SubFlow("s")
    with sub.if_("total > 0"):
        sub.filter_truncate(top_n=1)
    flow = Flow("f").add_subflow(sub)
    flow.transform_by_lua(
        lua_script="function g() return 1 end", function_for_common="g", common_output=["total"]
    )
    with pytest.raises(ValidationError, match=r"'s::if_1' .* reads common field 'total'"):
        compile_flow(flow)


def test_operators_may_not_write_control_fields() -> None:
    flow = Flow("f", common_input=["a"])
    with flow.if_("a"):
        flow.transform_by_lua(
            name="sneaky",
            lua_script="function g() return true end",
            function_for_common="g",
            common_output=["_if_1"],
        )
    with pytest.raises(ValidationError, match="operator 'sneaky' writes '_if_1', the control"):
        compile_flow(flow)


def test_user_operator_named_like_a_control_operator_is_a_duplicate() -> None:
    flow = Flow("f", common_input=["a"])
    with flow.if_("a"):
        flow.filter_truncate(name="if_1", top_n=1)
    with pytest.raises(ValidationError, match="duplicate operator name 'if_1'"):
        compile_flow(flow)
