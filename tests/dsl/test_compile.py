"""compile_flow: the unified JSON it writes and the checks it runs first."""

from __future__ import annotations

import datetime
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

import pineapple
from dsl import Flow, SubFlow, ValidationError, compile_flow, compile_json
from pineapple import ConfigError
from pineapple.resource import Manager

from ._schemas import StaticValue, TableFile, operator_registry, resource_registry
from .conftest import FIXED_TIME

Compile = Callable[[Flow], dict[str, Any]]


def line_of(function: Callable[..., Any], text: str) -> int:
    """The line of ``function``'s source that first holds ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def without_locations(problems: list[str]) -> list[str]:
    """Each problem without its ``(defined at: ...)`` suffix."""
    return [re.sub(r" \(defined at: [^()]*\(\): \.\w+\(\.\.\.\)\)$", "", p) for p in problems]


def recall_flow() -> Flow:
    flow = Flow("demo", common_input=["user_id"], item_output=["id", "score"])
    flow.resource("hot", StaticValue(value=[{"id": "a", "score": 1}]))
    flow.add_operator("recall_resource", {"resource_name": "hot"}, item_output=["id", "score"])
    return flow


def test_resource_is_compiled_with_type_interval_and_params(compile_isolated: Compile) -> None:
    flow = recall_flow()
    flow.resource("table", TableFile(path="data/t.csv", interval=30))
    config = compile_isolated(flow)
    assert config["resource_config"] == {
        "hot": {"type": "static", "interval": -1, "params": {"value": [{"id": "a", "score": 1}]}},
        "table": {
            "type": "table_file",
            "interval": 30,
            "params": {"path": "data/t.csv", "key_column": "id"},
        },
    }


def test_interval_defaults_to_the_class_and_can_be_overridden() -> None:
    assert TableFile(path="p").interval == 300
    assert StaticValue(value=1).interval == -1
    assert TableFile(path="p", interval=0).interval == 0
    assert TableFile(path="p", interval=2.5).interval == 2.5
    assert TableFile(path="p", interval=datetime.timedelta(minutes=2)).interval == 120
    assert isinstance(TableFile(path="p", interval=60.0).interval, int)


@pytest.mark.parametrize("bad", [-2, -0.5, True, "60"])
def test_interval_must_be_seconds_zero_or_minus_one(bad: Any) -> None:
    with pytest.raises(ValidationError, match="interval"):
        TableFile(path="p", interval=bad)


def test_none_valued_params_are_left_out() -> None:
    assert TableFile(path="p").params == {"path": "p", "key_column": "id"}


def test_no_resource_config_key_without_resources(compile_isolated: Compile) -> None:
    flow = Flow("plain", item_output=["id"])
    flow.add_operator("filter_truncate", {"top_n": 3})
    config = compile_isolated(flow)
    assert "resource_config" not in config
    assert '"resource_config"' not in compile_json(
        flow, operators=operator_registry(), resources=resource_registry()
    )


def test_undeclared_resource_raises_naming_operator_and_resource(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("recall_resource", {"resource_name": "hot_itemz"}, name="recall_hot")
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    message = str(info.value)
    assert "'recall_hot'" in message and "'hot_itemz'" in message
    assert isinstance(info.value, pineapple.ValidationError)


def test_resource_name_is_found_at_any_depth(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("merge_dedup", {"fields": [{"resource_name": "deep"}]}, name="m")
    with pytest.raises(ValidationError, match="operator 'm' needs resource 'deep'"):
        compile_isolated(flow)


def test_every_problem_is_reported_at_once(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("recall_resource", {"resource_name": "a"}, name="one")
    flow.add_operator("recall_resource", {"resource_name": "b"}, name="two")
    flow.add_operator("filter_truncate", {"top_n": "ten"}, name="three")
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    assert len(info.value.problems) == 3
    assert "has 3 problems" in str(info.value)


def test_duplicate_operator_name_raises(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("filter_truncate", {"top_n": 1}, name="cut")
    flow.add_operator("filter_truncate", {"top_n": 2}, name="cut")
    with pytest.raises(ValidationError, match="duplicate operator name 'cut'"):
        compile_isolated(flow)


def test_operator_name_may_not_equal_a_sub_flow_path(compile_isolated: Compile) -> None:
    flow = Flow("f")
    sub = SubFlow("tail").add_operator("filter_truncate", {"top_n": 1})
    flow.add_operator("filter_truncate", {"top_n": 1}, name="tail").add_subflow(sub)
    with pytest.raises(ValidationError, match="'tail' is also a sub-flow path"):
        compile_isolated(flow)


def test_sources_must_name_an_earlier_operator(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("merge_dedup", sources=["later"], name="merge")
    flow.add_operator("filter_truncate", {"top_n": 1}, name="later")
    flow.add_operator("merge_dedup", sources=["nowhere"], name="merge2")
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    assert without_locations(info.value.problems) == [
        "operator 'merge': source 'later' is declared after it "
        "(a forward reference; sources must come first)",
        "operator 'merge2': source 'nowhere' is not an operator of the flow",
    ]
    line = line_of(test_sources_must_name_an_earlier_operator, '"merge_dedup", sources=["later"]')
    assert info.value.problems[0].endswith(
        f"(defined at: tests/dsl/test_compile.py:{line} in "
        "test_sources_must_name_an_earlier_operator(): .merge_dedup(...))"
    )


def test_errors_name_the_sub_flow_path_and_the_line(compile_isolated: Compile) -> None:
    stage = SubFlow("stage")
    stage.add_operator("merge_dedup", sources=["nowhere"], name="merge")
    flow = Flow("f").add_subflow(SubFlow("outer").add_subflow(stage))
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    (problem,) = info.value.problems
    assert problem.startswith("operator 'merge' [outer/stage]: source 'nowhere'")
    assert "(defined at: tests/dsl/test_compile.py:" in problem
    assert "in test_errors_name_the_sub_flow_path_and_the_line(): .merge_dedup(...))" in problem


def test_sources_are_written(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("filter_truncate", {"top_n": 1}, name="a")
    flow.add_operator("merge_dedup", sources=["a"], name="m")
    ops = compile_isolated(flow)["pipeline_config"]["operators"]
    assert ops["m"]["sources"] == ["a"]
    assert "sources" not in ops["a"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, "parameter 'top_n' is required"),
        ({"top_n": "ten"}, "parameter 'top_n'"),
        ({"top_n": 1, "top_m": 2}, "unknown parameter 'top_m'"),
    ],
)
def test_params_are_checked_against_the_schema(
    compile_isolated: Compile, params: dict[str, Any], expected: str
) -> None:
    flow = Flow("f")
    flow.add_operator("filter_truncate", params, name="cut")
    with pytest.raises(ValidationError, match=re.escape(expected)) as info:
        compile_isolated(flow)
    assert "operator 'cut' (type filter_truncate)" in str(info.value)


def test_templated_value_passes_for_a_templatable_param(compile_isolated: Compile) -> None:
    flow = Flow("f", common_input=["limit"])
    flow.add_operator("filter_truncate", {"top_n": "{{limit}}"}, name="cut")
    assert compile_isolated(flow)["pipeline_config"]["operators"]["cut"]["top_n"] == "{{limit}}"


def test_template_fields_are_ordered_reads(compile_isolated: Compile) -> None:
    flow = Flow("f", common_input=["limit", "other"])
    flow.add_operator("filter_truncate", {"top_n": "{{limit}}"}, name="cut")
    flow.add_operator(
        "filter_truncate", {"top_n": "{{other}}"}, name="cut2", common_input=["other"]
    )
    ops = compile_isolated(flow)["pipeline_config"]["operators"]
    assert ops["cut"]["$metadata"]["common_input"] == []
    assert ops["cut"]["$metadata"]["common_input_template"] == ["limit"]
    assert "common_input_template" not in ops["cut2"]["$metadata"]


@pytest.mark.parametrize(
    ("op", "params", "expected"),
    [
        ("reorder_sort", {"order": "{{order}}"}, "'order' is not templatable"),
        ("filter_truncate", {"top_n": "top {{n}}"}, "'top_n' must be a bare {{field}} marker"),
    ],
)
def test_templates_only_where_the_schema_allows(
    compile_isolated: Compile, op: str, params: dict[str, Any], expected: str
) -> None:
    flow = Flow("f")
    flow.add_operator(op, params, name="x")
    with pytest.raises(ValidationError, match=re.escape(expected)):
        compile_isolated(flow)


def test_resource_params_are_checked_and_env_references_allowed(compile_isolated: Compile) -> None:
    flow = recall_flow()
    flow.resource("t", TableFile(path="${DATA_PATH}", port="${PORT}"))
    compile_isolated(flow)  # ${VAR} stays for the runtime to resolve
    bad = recall_flow()
    bad.resource("t", TableFile(path="p", port="8080"))
    with pytest.raises(ValidationError, match=r"resource 't' \(type table_file\).*'port'"):
        compile_isolated(bad)


def test_unknown_types_are_named(compile_isolated: Compile) -> None:
    class Mystery(StaticValue):
        _name = "mystery"

    flow = Flow("f")
    flow.resource("m", Mystery(value=1))
    flow.add_operator("recall_magic", name="r")
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    assert without_locations(info.value.problems) == [
        "operator 'r': unknown operator type 'recall_magic'",
        "resource 'm': unknown resource type 'mystery'",
    ]


def test_reserved_keys_and_non_json_params_are_refused(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_operator("merge_dedup", {"skip": ["_x"], "fields": [object()]}, name="m")
    with pytest.raises(ValidationError) as info:
        compile_isolated(flow)
    text = str(info.value)
    assert "'skip' is a reserved key" in text
    assert "parameter 'fields' is not a JSON value" in text


def test_empty_flow_is_refused(compile_isolated: Compile) -> None:
    with pytest.raises(ValidationError, match="has no operators"):
        compile_isolated(Flow("empty"))


def test_unified_format_top_level(compile_isolated: Compile) -> None:
    config = compile_isolated(recall_flow())
    assert list(config) == [
        "_PINEAPPLE_VERSION",
        "_PINEAPPLE_CREATE_TIME",
        "pipeline_config",
        "pipeline_group",
        "flow_contract",
        "resource_config",
    ]
    assert config["_PINEAPPLE_VERSION"] == pineapple.__version__
    assert config["_PINEAPPLE_CREATE_TIME"] == "2026-01-02T03:04:05Z"
    assert config["flow_contract"] == {
        "common_input": ["user_id"],
        "item_input": [],
        "common_output": [],
        "item_output": ["id", "score"],
    }
    (name,) = config["pipeline_config"]["operators"]
    assert re.fullmatch(r"recall_resource_[0-9a-f]{6}", name)
    assert config["pipeline_config"]["operators"][name] == {
        "type_name": "recall_resource",
        "$metadata": {
            "common_input": [],
            "common_output": [],
            "item_input": [],
            "item_output": ["id", "score"],
        },
        "$code_info": f"tests/dsl/test_compile.py:{line_of(recall_flow, 'recall_resource')} "
        "in recall_flow(): .recall_resource(...)",
        "resource_name": "hot",
    }
    assert config["pipeline_group"] == {"main": {"pipeline": [name]}}
    assert config["pipeline_config"]["pipeline_map"] == {}


def test_create_time_is_utc_now_by_default() -> None:
    config = compile_flow(
        recall_flow(), operators=operator_registry(), resources=resource_registry()
    )
    stamp = datetime.datetime.strptime(config["_PINEAPPLE_CREATE_TIME"], "%Y-%m-%dT%H:%M:%SZ")
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert abs((now - stamp).total_seconds()) < 60


def test_same_flow_compiles_to_the_same_bytes() -> None:
    def text() -> str:
        flow = recall_flow()
        flow.add_subflow(SubFlow("tail").add_operator("filter_truncate", {"top_n": 5}))
        return compile_json(
            flow,
            operators=operator_registry(),
            resources=resource_registry(),
            created_at=FIXED_TIME,
        )

    first = text()
    assert text() == first
    assert json.loads(first)["_PINEAPPLE_CREATE_TIME"] == "2026-01-02T03:04:05Z"
    assert first.endswith("}\n")


def test_auto_names_do_not_shift_when_an_operator_is_inserted(compile_isolated: Compile) -> None:
    def names(insert: bool) -> list[str]:
        flow = Flow("f", item_input=["score"])
        if insert:
            flow.add_operator("reorder_sort", item_input=["score"])
        flow.add_operator("filter_truncate", {"top_n": 5})
        flow.add_operator("filter_truncate", {"top_n": 5})
        return list(compile_isolated(flow)["pipeline_config"]["operators"])

    before, after = names(False), names(True)
    assert after[1:] == before
    assert before[1] == before[0] + "_1"  # Apple's suffix for a second identical one


def test_sub_flows_become_pipeline_map_entries(compile_isolated: Compile) -> None:
    inner = SubFlow("inner").add_operator("filter_truncate", {"top_n": 2}, name="cut")
    outer = SubFlow("outer").add_operator("reorder_sort", name="sort").add_subflow(inner)
    flow = Flow("f").add_operator("filter_truncate", {"top_n": 9}, name="first")
    flow.add_subflow(outer)
    config = compile_isolated(flow)
    assert config["pipeline_group"] == {"main": {"pipeline": ["first", "outer"]}}
    assert config["pipeline_config"]["pipeline_map"] == {
        "outer": {"pipeline": ["sort", "outer/inner"]},
        "outer/inner": {"pipeline": ["cut"]},
    }
    assert list(config["pipeline_config"]["operators"]) == ["first", "sort", "cut"]


def test_a_sub_flow_can_be_placed_once(compile_isolated: Compile) -> None:
    sub = SubFlow("s").add_operator("filter_truncate", {"top_n": 1})
    flow = Flow("f").add_subflow(sub).add_subflow(sub)
    with pytest.raises(ValidationError, match="'s' is placed more than once"):
        compile_isolated(flow)


def test_empty_sub_flow_is_refused(compile_isolated: Compile) -> None:
    flow = Flow("f").add_operator("filter_truncate", {"top_n": 1}).add_subflow(SubFlow("s"))
    with pytest.raises(ValidationError, match="sub-flow 's' has no operators"):
        compile_isolated(flow)


def test_skip_when_guards_operators_and_sub_flows(compile_isolated: Compile) -> None:
    flow = Flow("f", common_input=["level"], item_input=["s"])
    flow.add_operator("filter_truncate", {"top_n": 9}, name="before")
    sub = SubFlow("vip").add_operator("reorder_sort", name="vip_sort", item_input=["s"])
    with sub.skip_when("_inner"):
        sub.add_operator("filter_truncate", {"top_n": 1}, name="inner_cut")
    with flow.skip_when("_not_vip"):
        flow.add_operator("filter_truncate", {"top_n": 3}, name="guarded", common_input=["level"])
        flow.add_subflow(sub)
    flow.add_operator("filter_truncate", {"top_n": 2}, name="after")
    ops = compile_isolated(flow)["pipeline_config"]["operators"]
    assert "skip" not in ops["before"] and "skip" not in ops["after"]
    assert ops["guarded"]["skip"] == ["_not_vip"]
    # skip guards are ordered before the operator but not handed to it
    assert ops["guarded"]["$metadata"]["common_input"] == ["level"]
    assert ops["guarded"]["$metadata"]["common_input_skip"] == ["_not_vip"]
    assert "common_input_skip" not in ops["before"]["$metadata"]
    assert ops["vip_sort"]["skip"] == ["_not_vip"]
    assert ops["inner_cut"]["skip"] == ["_inner", "_not_vip"]  # own guards first (Apple)
    assert ops["inner_cut"]["$metadata"]["common_input"] == []
    assert ops["inner_cut"]["$metadata"]["common_input_skip"] == ["_inner", "_not_vip"]


def test_defaults_are_written_when_given(compile_isolated: Compile) -> None:
    flow = Flow("f", item_input=["flag"])
    flow.add_operator(
        "filter_condition",
        {"value": 0},
        name="c",
        item_input=["flag"],
        item_defaults={"flag": 0},
        common_defaults={},
    )
    op = compile_isolated(flow)["pipeline_config"]["operators"]["c"]
    assert op["item_defaults"] == {"flag": 0}
    assert op["common_defaults"] == {}
    assert op["value"] == 0


def test_two_sub_flows_with_one_name_are_refused(compile_isolated: Compile) -> None:
    flow = Flow("f")
    flow.add_subflow(SubFlow("s").add_operator("filter_truncate", {"top_n": 1}))
    flow.add_subflow(SubFlow("s").add_operator("filter_truncate", {"top_n": 2}))
    with pytest.raises(ValidationError, match="sub-flow path 's' is used twice"):
        compile_isolated(flow)


def test_a_sub_flow_cannot_contain_its_ancestor(compile_isolated: Compile) -> None:
    outer = SubFlow("outer").add_operator("filter_truncate", {"top_n": 1})
    inner = SubFlow("inner").add_operator("filter_truncate", {"top_n": 2}).add_subflow(outer)
    outer.add_subflow(inner)
    with pytest.raises(ValidationError, match="'outer' is placed more than once"):
        compile_isolated(Flow("f").add_subflow(outer))


def test_resource_validators_and_keep_previous_are_compiled(compile_isolated: Compile) -> None:
    import resources  # noqa: F401  (registers "static" for the runtime check below)

    flow = Flow("f", item_output=["id"])
    flow.resource(
        "items",
        StaticValue(value=[{"id": 1}]),
        validate={"min_rows": 1, "max_change_ratio": 0.5},
        keep_previous=True,
        replay=True,
    )
    flow.recall_resource(resource_name="items", item_output=["id"])
    compiled = compile_isolated(flow)
    entry = compiled["resource_config"]["items"]
    assert entry["validate"] == {"min_rows": 1, "max_change_ratio": 0.5}
    assert entry["keep_previous"] is True and entry["replay"] is True
    # The compiled entry is one the runtime accepts.
    rm = Manager()
    rm.load_from_root_config(compiled)
    assert rm.names() == ["items"] and rm.entries()["items"].replay is True
    rm.stop()


def test_a_replay_that_is_not_a_bool_is_refused() -> None:
    with pytest.raises(ValidationError, match="replay must be a bool"):
        Flow("f").resource("items", StaticValue(value=[]), replay="yes")  # type: ignore[arg-type]
    rm = Manager()
    config = {"resource_config": {"items": {"type": "static", "replay": 1, "params": {}}}}
    with pytest.raises(ConfigError, match="'replay' must be true or false"):
        rm.load_from_root_config(config)
    rm.stop()


def test_a_bad_validate_block_is_refused_at_declaration() -> None:
    flow = Flow("f")
    with pytest.raises(ValidationError, match="unknown validate keys"):
        flow.resource("items", StaticValue(value=[]), validate={"min_rowz": 1})
