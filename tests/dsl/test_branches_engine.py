"""Compiled branches run in ``pineapple.engine.Engine``; the public fixtures' answers hold."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsl import Flow, SubFlow, compile_flow
from pineapple.engine import Engine

ROOT = Path(__file__).resolve().parents[2]


def fixture(name: str) -> dict[str, Any]:
    raw = Path(os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple"))
    path = (raw if raw.is_absolute() else ROOT / raw) / "pipelines" / name
    if not path.is_file():
        pytest.skip(f"PINE_FIXTURES_DIR not set or {path} absent")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def numbers_as_float(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | dict | list):
        return value
    if isinstance(value, dict):
        return {k: numbers_as_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [numbers_as_float(v) for v in value]
    return float(value)


def engine_of(flow: Flow) -> Iterator[Engine]:
    engine = Engine(compile_flow(flow))
    try:
        yield engine
    finally:
        engine.close()


def label(node: Flow | SubFlow, name: str, value: str) -> None:
    node.transform_by_lua(
        name=name,
        lua_script=f'function f() return "{value}" end',
        function_for_item="f",
        item_output=["label"],
    )


def tier_flow() -> Flow:
    flow = Flow(
        "tiers", common_input=["tier", "age"], item_input=["id"], item_output=["id", "label"]
    )
    with flow.if_("tier == 'vip'"):
        with flow.if_("{{age}} < 30"):
            label(flow, "young_vip", "young vip")
        with flow.else_():
            label(flow, "vip", "vip")
    with flow.elif_("tier == 'new'"):
        label(flow, "new", "new")
    with flow.else_():
        label(flow, "other", "other")
    flow.filter_truncate(name="cut", top_n=1)
    return flow


@pytest.fixture
def tiers() -> Iterator[Engine]:
    yield from engine_of(tier_flow())


@pytest.mark.parametrize(
    ("common", "want"),
    [
        ({"tier": "vip", "age": 20}, "young vip"),
        ({"tier": "vip", "age": 40}, "vip"),
        ({"tier": "new", "age": 20}, "new"),
        ({"tier": "regular", "age": 20}, "other"),
        ({"tier": None, "age": 20}, "other"),
    ],
)
def test_engine_takes_exactly_one_branch(tiers: Engine, common: dict[str, Any], want: str) -> None:
    got = tiers.execute(None, {"common": common, "items": [{"id": 1}, {"id": 2}]})
    assert got == {"common": {}, "items": [{"id": 1, "label": want}]}


def test_condition_on_a_field_computed_by_an_earlier_operator() -> None:
    flow = Flow("f", item_input=["price"], item_output=["price", "label"])
    flow.transform_by_lua(
        lua_script="function avg() local s = 0 for i = 1, #price do s = s + price[i] end "
        "return s / #price end",
        function_for_common="avg",
        item_input=["price"],
        common_output=["avg_price"],
    )
    with flow.if_("avg_price > 100"):
        label(flow, "dear", "dear")
    with flow.else_():
        label(flow, "cheap", "cheap")
    for engine in engine_of(flow):
        dear = engine.execute(None, {"common": {}, "items": [{"price": 150}, {"price": 90}]})
        cheap = engine.execute(None, {"common": {}, "items": [{"price": 50}]})
    assert [i["label"] for i in dear["items"]] == ["dear", "dear"]
    assert cheap["items"] == [{"price": 50, "label": "cheap"}]


# -- the public fixtures, reproduced from flows ------------------------------


def _run_cases(flow: Flow, data: dict[str, Any]) -> None:
    for engine in engine_of(flow):
        for case in data["cases"]:
            got = engine.execute(None, case["request"])
            want = case["expected"]
            assert numbers_as_float(got["common"]) == numbers_as_float(want["common"]), case
            assert numbers_as_float(got["items"]) == numbers_as_float(want["items"]), case


def subflow_if_else() -> Flow:
    """``pipelines/subflow_if_else_control_flow.json`` as a flow (Apple's call shape)."""
    flow = Flow(
        "subflow_if_else",
        common_input=["score_threshold"],
        item_input=["item_score"],
        item_output=["item_score", "item_label"],
    )
    sf = SubFlow("my_sf")
    sf.if_("{{score_threshold}} > 50").transform_by_lua(
        name="label_high_low",
        lua_script='function label() if item_score >= score_threshold then return "high" '
        'else return "low" end end',
        function_for_item="label",
        common_input=["score_threshold"],
        item_input=["item_score"],
        item_output=["item_label"],
    )
    sf.else_().transform_by_lua(
        name="label_default",
        lua_script='function fallback() return "default" end',
        function_for_item="fallback",
        item_input=["item_score"],
        item_output=["item_label"],
    )
    sf.end_if_()
    return flow.add_subflow(sf)


def test_subflow_if_else_fixture_config_is_reproduced() -> None:
    want = fixture("subflow_if_else_control_flow.json")["config"]
    got = compile_flow(subflow_if_else())
    for key in ("pipeline_group", "flow_contract"):
        assert got[key] == want[key]
    assert got["pipeline_config"]["pipeline_map"] == want["pipeline_config"]["pipeline_map"]
    got_ops, want_ops = got["pipeline_config"]["operators"], want["pipeline_config"]["operators"]
    assert list(got_ops) == list(want_ops)
    for name in ("my_sf::if_1", "my_sf::else_2"):  # control operators: the same bytes
        # (the fixture was written without Apple's "[if] ..." $code_info)
        assert got_ops[name].pop("$code_info").startswith(("[if] ", "[else] "))
        assert json.dumps(got_ops[name]) == json.dumps(want_ops[name])
    for name in ("label_high_low", "label_default"):
        # Business operators: the fixture lists its skip guard in common_input (the
        # legacy form); ours lists it in common_input_skip, the dedicated bucket.
        g, w = dict(got_ops[name]), dict(want_ops[name])
        assert g.pop("$code_info").startswith("tests/dsl/test_branches_engine.py:")
        g_meta, w_meta = g.pop("$metadata"), w.pop("$metadata")
        assert g == w
        reads = g_meta.pop("common_input") + g_meta.pop("common_input_skip")
        assert sorted(reads) == sorted(w_meta.pop("common_input"))
        assert g_meta == w_meta


def test_subflow_if_else_fixture_cases_pass() -> None:
    _run_cases(subflow_if_else(), fixture("subflow_if_else_control_flow.json"))


def test_skip_branch_fixture_cases_pass_with_skip_when() -> None:
    flow = Flow(
        "skip_branch",
        common_input=["user_level"],
        item_input=["item_price"],
        item_output=["item_price", "item_discounted"],
    )
    stage = SubFlow("main_stage")
    stage.transform_by_lua(
        name="set_flag",
        lua_script="function check_vip() return user_level >= 3 end",
        function_for_common="check_vip",
        common_input=["user_level"],
        common_output=["_skip_discount"],
    )
    with stage.skip_when("_skip_discount"):
        stage.transform_by_lua(
            name="apply_discount",
            lua_script="function discount() return item_price * 0.9 end",
            function_for_item="discount",
            item_input=["item_price"],
            item_output=["item_discounted"],
        )
    stage.filter_truncate(name="truncate_top2", top_n=2)
    _run_cases(flow.add_subflow(stage), fixture("skip_branch.json"))


def test_multi_skip_fixture_cases_pass_with_skip_when() -> None:
    flow = Flow(
        "multi_skip",
        common_input=["_skip_copy", "_skip_double", "tag"],
        item_input=["item_score"],
        item_output=["item_score", "tag", "item_doubled"],
    )
    stage = SubFlow("main_stage")
    with stage.skip_when("_skip_copy"):
        stage.transform_copy(direction="common_to_item", common_input=["tag"], item_output=["tag"])
    with stage.skip_when("_skip_double"):
        stage.transform_by_lua(
            lua_script="function dbl() return item_score * 2 end",
            function_for_item="dbl",
            item_input=["item_score"],
            item_output=["item_doubled"],
        )
    stage.filter_truncate(top_n=2)
    _run_cases(flow.add_subflow(stage), fixture("multi_skip.json"))
