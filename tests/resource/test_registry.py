from __future__ import annotations

from typing import Any

import pytest

from pineapple import ConfigError, ParamSpec
from pineapple._params import validate_params
from pineapple.resource import DuplicateRegistrationError, Registry, ResourceSchema


def factory(params: dict[str, Any]) -> Any:
    return lambda: params


def test_duplicate_type_raises() -> None:
    reg = Registry()
    reg.register(ResourceSchema(name="t"), factory)
    with pytest.raises(DuplicateRegistrationError, match="'t'"):
        reg.register(ResourceSchema(name="t"), factory)


def test_all_is_sorted_and_isolated_from_the_default_registry() -> None:
    reg = Registry()
    for name in ("b", "a", "c"):
        reg.register(ResourceSchema(name=name), factory)
    assert [s.name for s in reg.all()] == ["a", "b", "c"]
    assert reg.get("a") is not None
    assert reg.get("zzz") is None


def test_param_spec_rejects_unknown_types() -> None:
    with pytest.raises(ValueError, match="int64"):
        ParamSpec(type="int64")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "good", "bad"),
    [
        ("string", "x", 1),
        ("int", 3, 3.5),
        ("int", 3, True),
        ("float", 2, "2"),
        ("bool", False, 0),
        ("list", [1], {"a": 1}),
        ("dict", {"a": 1}, [1]),
    ],
)
def test_param_types_are_strict(spec: Any, good: Any, bad: Any) -> None:
    specs = {"p": ParamSpec(type=spec, required=True)}
    assert validate_params("thing", specs, {"p": good}) == {"p": good}
    with pytest.raises(ConfigError, match=r"thing: parameter 'p'"):
        validate_params("thing", specs, {"p": bad})


def test_builtin_plugins_register_on_first_miss() -> None:
    from pineapple import resource

    reg = resource.lowlevel.default_registry()
    assert isinstance(reg.all(), list)  # loading entry points never raises


def test_list_defaults_are_allowed_and_never_shared() -> None:
    specs = {"cols": ParamSpec(type="list", default=["a"])}
    first = validate_params("thing", specs, {})
    first["cols"].append("b")
    assert validate_params("thing", specs, {}) == {"cols": ["a"]}
