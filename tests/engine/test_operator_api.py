"""The operator API: building, binding, params, input/output objects."""

from __future__ import annotations

import textwrap

import pytest

from pineapple import Context, RegistryError
from pineapple import engine as eng
from pineapple.engine import (
    Metadata,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorRegistry,
    OperatorSchema,
    build_operator,
)
from pineapple.engine import _operator as operator_api


def _registry() -> OperatorRegistry:
    """A registry holding the operator API's own example (``transform_scale`` in the
    docs of ``pineapple.engine._operator``): the tests below keep that example working."""
    doc = operator_api.__doc__ or ""
    example = textwrap.dedent(doc.split("::\n", 1)[1].split("\nReading:", 1)[0])
    reg = OperatorRegistry()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(eng, "register_operator", reg.register)  # not the default registry
        exec(compile(example, "<pineapple.engine._operator example>", "exec"), {})
    return reg


def test_public_face_lists_its_names() -> None:
    for name in eng.__all__:
        assert hasattr(eng, name), name


def test_build_binds_name_and_metadata_then_executes() -> None:
    op, schema = build_operator(
        "transform_scale",
        {"factor": 2, "type_name": "transform_scale"},
        {"item_input": ["x"], "item_output": ["y"]},
        name="scale",
        registry=_registry(),
    )
    assert schema.kind == "transform"
    assert op.name == "scale"
    assert op.meta == Metadata(item_input=("x",), item_output=("y",))
    out = OperatorOutput()
    op.execute(Context(), OperatorInput({}, [{"x": 1}, {"x": 2.5}]), out)
    assert out.item_write_map() == {0: {"y": 2.0}, 1: {"y": 5.0}}


def test_missing_required_param_names_param_and_operator() -> None:
    with pytest.raises(RegistryError, match='required parameter "factor" missing for operator'):
        build_operator("transform_scale", {}, registry=_registry())


def test_unknown_param_is_rejected() -> None:
    with pytest.raises(RegistryError, match='unknown parameter "facter"'):
        build_operator("transform_scale", {"factor": 1, "facter": 2}, registry=_registry())


def test_constructor_error_is_init_failed() -> None:
    with pytest.raises(RegistryError, match="Init failed: transform_scale: factor must not be 0"):
        build_operator("transform_scale", {"factor": 0}, registry=_registry())


def test_a_param_of_the_wrong_type_is_refused_before_the_constructor_runs() -> None:
    with pytest.raises(RegistryError) as refused:
        build_operator("transform_scale", {"factor": "x"}, name="scale", registry=_registry())
    assert str(refused.value) == (
        'pine: registry error [transform_scale]: operator "scale": '
        'param factor must be numeric, got string "x"'
    )


def test_unknown_type() -> None:
    with pytest.raises(RegistryError, match="operator type not registered"):
        build_operator("nope", {}, registry=_registry())


def test_input_column_applies_item_defaults_and_tolerates_missing() -> None:
    inp = OperatorInput({}, [{"a": 1}, {"a": None}, {}], item_defaults={"a": 7})
    assert inp.column("a") == [1, 7, 7]
    assert inp.item(1, "a") == 7
    assert inp.item(5, "a") is None
    assert OperatorInput({}, [{"a": 1}, {}]).column("a") == [1, None]


def test_output_records_every_kind_of_write() -> None:
    out = OperatorOutput()
    assert out.used() == (False, False, False, False, False)
    out.set_common("c", 1)
    out.set_item(0, "f", 2)
    out.add_item({"id": "x"})
    out.remove_items(range(2, 4))
    out.remove_item(7)
    out.set_item_order([1, 0])
    out.warn("first")
    out.warn("second")
    assert out.used() == (True, True, True, True, True)
    assert out.removed == {2, 3, 7}
    assert out.warning == "first"


def test_an_operator_without_params_needs_no_init() -> None:
    class _Count(Operator):
        def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            out.set_common(self.meta.common_output[0], len(inp))

    reg = OperatorRegistry()
    reg.register(OperatorSchema(name="transform_count", kind="transform", description="n"), _Count)
    op, _ = build_operator(
        "transform_count", {}, {"common_output": ["n"]}, name="count", registry=reg
    )
    out = OperatorOutput()
    op.execute(Context(), OperatorInput({}, [{}, {}]), out)
    assert out.common_writes == {"n": 2}
