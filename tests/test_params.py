"""``pineapple._params``: the one check of a param value against its ``ParamSpec``."""

from __future__ import annotations

from typing import Any

import pytest

from pineapple import ConfigError, ParamSpec, RegistryError
from pineapple._params import param_problem, validate_params
from pineapple.engine import Operator, OperatorRegistry, OperatorSchema, build_operator


@pytest.mark.parametrize(
    ("type_name", "good"),
    [
        ("string", ""),
        ("int", 3),
        ("int", -(2**70)),
        ("int", 5.0),  # JSON: Go decodes every number as a float64
        ("float", 2.5),
        ("float", 2),  # an integral number is a valid float
        ("bool", False),
        ("list", [1, "a"]),
        ("list", (1,)),  # a DSL tuple, written as an array
        ("dict", {"a": [1]}),
        ("any", object()),
    ],
)
def test_a_value_of_the_declared_type_passes(type_name: Any, good: Any) -> None:
    assert param_problem(ParamSpec(type=type_name), good) is None


@pytest.mark.parametrize(
    ("type_name", "bad", "problem"),
    [
        ("string", 1, "must be a string, got int 1"),
        ("int", 3.5, "must be numeric (an integer), got float 3.5"),
        ("int", True, "must be numeric (an integer), got true"),
        ("int", "3", 'must be numeric (an integer), got string "3"'),
        ("int", float("inf"), "must be numeric (an integer), got float inf"),
        ("float", "x", 'must be numeric, got string "x"'),
        ("float", False, "must be numeric, got false"),
        ("bool", 0, "must be true or false, got int 0"),
        ("bool", "true", 'must be true or false, got string "true"'),
        ("list", {"a": 1}, "must be a list (JSON array), got an object"),
        ("dict", [1, 2], "must be an object (JSON object), got a list of 2"),
        ("dict", {1: "a"}, "must be an object (JSON object), got an object"),
    ],
)
def test_a_value_of_another_type_says_what_was_given_and_expected(
    type_name: Any, bad: Any, problem: str
) -> None:
    assert param_problem(ParamSpec(type=type_name), bad, echo=True) == problem


def test_null_is_a_value_only_of_any_list_and_dict() -> None:
    containers: tuple[Any, ...] = ("any", "list", "dict")
    for type_name in containers:
        assert param_problem(ParamSpec(type=type_name), None) is None
    scalars: tuple[Any, ...] = ("string", "int", "float", "bool")
    for type_name in scalars:
        problem = param_problem(ParamSpec(type=type_name), None)
        assert problem is not None and problem.endswith("got null"), problem


def test_a_template_marker_is_left_to_the_template_checks() -> None:
    assert param_problem(ParamSpec(type="int", templatable=True), "{{page}}") is None
    assert param_problem(ParamSpec(type="float"), "x {{page}}") is None  # the plan refuses it
    assert param_problem(ParamSpec(type="int"), "{{ page }}") is not None  # not a marker


def test_choices_are_checked_after_the_type() -> None:
    spec = ParamSpec(type="string", choices=("asc", "desc"))
    assert param_problem(spec, "desc") is None
    assert param_problem(spec, "up", echo=True) == 'must be one of "asc", "desc", got string "up"'
    assert param_problem(spec, 1) == "must be a string, got int 1"
    numbers = ParamSpec(type="int", choices=(1, 2))
    assert param_problem(numbers, 2.0) is None
    assert param_problem(numbers, 3) == "must be one of 1, 2, got int 3"


def test_choices_written_as_a_list_are_kept_as_a_tuple() -> None:
    assert ParamSpec(type="int", choices=[1, 2]).choices == (1, 2)  # type: ignore[arg-type]


def test_a_range_is_inclusive_on_both_ends() -> None:
    spec = ParamSpec(type="float", minimum=0, maximum=1)
    assert param_problem(spec, 0) is None and param_problem(spec, 1.0) is None
    assert param_problem(spec, -0.5) == "must be >= 0, got float -0.5"
    assert param_problem(spec, 2) == "must be <= 1, got int 2"
    assert param_problem(ParamSpec(type="int", minimum=1), 0) == "must be >= 1, got int 0"


def test_a_given_string_is_echoed_only_when_asked_and_cut() -> None:
    spec = ParamSpec(type="int")
    assert param_problem(spec, "hunter2") == "must be numeric (an integer), got a string"
    long = "s" * 100
    assert param_problem(spec, long, echo=True) == (
        f'must be numeric (an integer), got string "{"s" * 40}... (60 more bytes)"'
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "list", "choices": ([1],)},
        {"type": "string", "choices": ("a", 1)},
        {"type": "string", "minimum": 0},
        {"type": "bool", "maximum": 1},
    ],
)
def test_a_spec_that_cannot_hold_is_refused_when_declared(spec: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ParamSpec"):
        ParamSpec(**spec)


def test_validate_params_lists_every_problem_and_never_echoes_a_string() -> None:
    specs = {
        "dsn": ParamSpec(type="string", required=True),
        "rows": ParamSpec(type="int", minimum=1),
        "mode": ParamSpec(type="string", choices=("a", "b")),
    }
    with pytest.raises(ConfigError) as refused:
        validate_params("resource 'r'", specs, {"rows": "secret", "mode": "c", "mdoe": 1})
    assert str(refused.value) == (
        "resource 'r': parameter 'dsn' is required; "
        'parameter \'mode\' must be one of "a", "b", got a string; '
        "parameter 'rows' must be numeric (an integer), got a string; "
        "unknown parameter 'mdoe'; did you mean 'mode'?"
    )
    assert validate_params("r", specs, {"dsn": "x", "rows": None}) == {"dsn": "x", "rows": None}


class _Plain(Operator):
    def execute(self, *args: Any) -> None:
        """Nothing per request."""


def _registry(**params: ParamSpec) -> OperatorRegistry:
    reg = OperatorRegistry()
    schema = OperatorSchema(name="p_op", kind="observe", description="d", params=params)
    reg.register(schema, _Plain)
    return reg


def test_the_engine_names_the_operator_the_param_and_both_values() -> None:
    reg = _registry(order=ParamSpec(type="string", choices=("asc", "desc")))
    with pytest.raises(RegistryError) as refused:
        build_operator("p_op", {"order": "up"}, name="sort_step", registry=reg)
    assert str(refused.value) == (
        'pine: registry error [p_op]: operator "sort_step": '
        'param order must be one of "asc", "desc", got string "up"'
    )


def test_the_engine_checks_given_values_not_defaults_and_applies_defaults() -> None:
    reg = _registry(size=ParamSpec(type="int", minimum=1, default=10))
    op, _ = build_operator("p_op", {}, registry=reg)
    assert isinstance(op, _Plain)
    with pytest.raises(RegistryError, match='operator "p_op": param size must be >= 1, got int 0'):
        build_operator("p_op", {"size": 0}, registry=reg)
