"""Flow, SubFlow and BaseResource: what a declaration checks as it is made."""

from __future__ import annotations

from typing import Any

import pytest

from dsl import BaseResource, Flow, SubFlow, ValidationError

from ._schemas import StaticValue


@pytest.mark.parametrize("name", ["", None])
def test_names_are_non_empty(name: Any) -> None:
    with pytest.raises(ValidationError, match="name"):
        Flow(name)
    with pytest.raises(ValidationError, match="name"):
        SubFlow(name)


def test_a_sub_flow_path_holds_no_slash() -> None:
    # The flow's own name is no part of a path (Apple takes any); a sub-flow's is.
    assert Flow("a/b").name == "a/b"
    with pytest.raises(ValidationError, match="SubFlow name 'a/b' must not contain '/'"):
        Flow("f").add_subflow(SubFlow("a/b"))


def test_contract_lists_must_be_lists_of_names() -> None:
    with pytest.raises(ValidationError, match="common_input must be a list"):
        Flow("f", common_input="user_id")  # a str is a Sequence[str]: refused at run time
    flow = Flow("f", common_input=("a", "b"))
    assert flow.common_input == ["a", "b"]


def test_operator_metadata_must_be_lists_of_names() -> None:
    flow = Flow("f")
    with pytest.raises(ValidationError, match="item_output must be a list"):
        flow.add_operator("x", item_output="score")  # a Sequence[str] too: refused at run time
    with pytest.raises(ValidationError, match="name must be a string"):
        flow.add_operator("x", name=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="type_name"):
        flow.add_operator("")


def test_operator_calls_chain_and_record_in_order() -> None:
    flow = Flow("f")
    sub = SubFlow("s")
    assert flow.add_operator("a", {"k": 1, "gone": None}) is flow
    assert flow.add_subflow(sub) is flow
    first, second = flow.children
    assert not isinstance(first, type(second))
    assert getattr(first, "params", None) == {"k": 1, "gone": None}  # an explicit null


def test_add_subflow_takes_a_subflow() -> None:
    flow = Flow("f")
    with pytest.raises(ValidationError, match="takes a SubFlow"):
        flow.add_subflow(Flow("g"))  # type: ignore[arg-type]
    sub = SubFlow("s")
    with pytest.raises(ValidationError, match="cannot contain itself"):
        sub.add_subflow(sub)


def test_resource_declarations() -> None:
    flow = Flow("f").resource("hot", StaticValue(value=[]))
    assert [(r.name, r.resource_type, r.interval) for r in flow.resources] == [
        ("hot", "static", -1)
    ]
    with pytest.raises(ValidationError, match="resource 'hot' is declared twice"):
        flow.resource("hot", StaticValue(value=[]))
    with pytest.raises(ValidationError, match="expected a BaseResource"):
        flow.resource("x", {"type": "static"})  # type: ignore[arg-type]


def test_base_resource_may_be_typed_after_construction_as_in_apple() -> None:
    untyped = BaseResource(value=1)
    assert untyped.interval == 600  # Apple's default interval
    with pytest.raises(ValidationError, match="resource 'x': BaseResource has no resource type"):
        Flow("f").resource("x", untyped)
    untyped.resource_type = "static"
    flow = Flow("f").resource("x", untyped)
    assert [(r.name, r.resource_type, r.interval) for r in flow.resources] == [("x", "static", 600)]


def test_resource_repr_shows_param_names_not_values() -> None:
    res = StaticValue(value="s3cret")
    assert "s3cret" not in repr(res)
    assert "value" in repr(res)


@pytest.mark.parametrize("field", ["not_vip", ""])
def test_skip_fields_start_with_underscore(field: str) -> None:
    flow = Flow("f")
    with (
        pytest.raises(ValidationError, match="must be a string starting with '_'"),
        flow.skip_when(field),
    ):
        pass


def test_skip_scope_ends_with_the_block_even_on_error() -> None:
    flow = Flow("f")
    with pytest.raises(RuntimeError), flow.skip_when("_a"):
        raise RuntimeError("boom")
    flow.add_operator("x", name="after")
    (call,) = flow.children
    assert getattr(call, "skip", None) == []


def test_skip_when_needs_a_field() -> None:
    with pytest.raises(ValidationError, match="at least one field"), Flow("f").skip_when():
        pass
