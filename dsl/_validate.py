"""The compile-time checks of a flow; each returns the problems it finds as messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pineapple import ConfigError, ParamSpec
from pineapple._params import TEMPLATE_MARKER, validate_params
from pineapple._suggest import did_you_mean
from pineapple.engine import OperatorRegistry
from pineapple.resource import Registry
from pineapple.resource.lowlevel import resource_names

from ._dataflow import (
    Scope,
    check_coverage,
    check_data_parallel,
    check_dead_operators,
    check_param_metadata,
    check_underscore_outputs,
    check_write_without_read,
    locate,
)
from ._errors import ValidationError
from ._subflow_contract import check_subflow_contracts

if TYPE_CHECKING:
    from ._flow import Flow
    from ._ir import CompiledOperator

__all__ = ["TEMPLATE_MARKER", "check_flow"]

_BARE_MARKER = re.compile(r"^\{\{(\w+)\}\}$")


def _deferred(spec: ParamSpec, value: Any) -> bool:
    """A value resolved later: a ``${VAR}`` reference (the shared check defers templates)."""
    return isinstance(value, str) and spec.type not in ("string", "any") and "${" in value


def _check_templates(
    what: str, specs: Mapping[str, ParamSpec], params: Mapping[str, Any]
) -> Iterator[str]:
    for key, value in params.items():
        spec = specs.get(key)
        if spec is None or not isinstance(value, str) or not TEMPLATE_MARKER.search(value):
            continue
        if not spec.templatable:
            yield f"{what}: parameter {key!r} is not templatable, so it cannot take {value!r}"
        elif not _BARE_MARKER.match(value):
            yield f"{what}: parameter {key!r} must be a bare {{{{field}}}} marker, got {value!r}"


_NULLABLE_TYPES = frozenset({"any", "list", "dict"})
"""Param types that take an explicit ``None`` (written as JSON ``null``); Apple's rule."""

_MAX_NESTING = 64
"""How deep the nested-template scan descends into a param value (deeper is not scanned)."""


def _check_nulls(
    what: str, specs: Mapping[str, ParamSpec], params: Mapping[str, Any]
) -> Iterator[str]:
    for key, value in params.items():
        spec = specs.get(key)
        if value is None and spec is not None and spec.type not in _NULLABLE_TYPES:
            yield (
                f"{what}: param {key!r} is explicitly None; declared type {spec.type!r} does not "
                "accept null (pass a value or omit the keyword)"
            )


def _nested_marker(value: Any, path: str, depth: int) -> tuple[str, str] | None:
    """The first ``{{field}}`` inside a list or dict of ``value`` (bounded by ``_MAX_NESTING``)."""
    if depth > _MAX_NESTING:
        return None
    if isinstance(value, dict):
        children: Iterator[tuple[str, Any]] = ((f"{path}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, list):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        if path and isinstance(value, str) and TEMPLATE_MARKER.search(value):
            return path, value
        return None
    for child_path, child in children:
        found = _nested_marker(child, child_path, depth + 1)
        if found is not None:
            return found
    return None


def _check_nested_templates(what: str, params: Mapping[str, Any]) -> Iterator[str]:
    for key, value in params.items():
        found = _nested_marker(value, "", 0)
        if found is not None:
            yield (
                f"{what}: param {key!r} contains a nested {{{{field}}}} marker at {found[0]} "
                f"(value {found[1]!r}); templates are resolved only in top-level params"
            )


def _check_params(
    what: str, specs: Mapping[str, ParamSpec], params: Mapping[str, Any]
) -> str | None:
    loose = {
        key: ParamSpec(type="any", required=spec.required, description=spec.description)
        if _deferred(spec, params.get(key)) or (key in params and params[key] is None)
        else spec
        for key, spec in specs.items()
    }
    try:
        validate_params(what, loose, params)
    except ConfigError as exc:
        return str(exc)
    return None


def _check_json(what: str, params: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, value in params.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            problems.append(f"{what}: parameter {key!r} is not a JSON value")
    return problems


def _check_operators(
    compiled: list[CompiledOperator], registry: OperatorRegistry, reserved: frozenset[str]
) -> Iterator[str]:
    for op in compiled:
        what = f"{locate(op)} (type {op.call.type_name})"
        schema = registry.get(op.call.type_name)
        if schema is None:
            hint = did_you_mean(op.call.type_name, [s.name for s in registry.all()])
            yield f"{locate(op)}: unknown operator type {op.call.type_name!r}{hint}"
        else:
            problem = _check_params(what, schema.params, op.call.params)
            if problem:
                yield problem
            yield from _check_nulls(what, schema.params, op.call.params)
            yield from _check_templates(what, schema.params, op.call.params)
        yield from _check_nested_templates(what, op.call.params)
        for key in sorted(reserved.intersection(op.call.params)):
            yield f"{what}: {key!r} is a reserved key, not a parameter"
        yield from _check_json(what, op.call.params)


def _check_sources(compiled: list[CompiledOperator]) -> Iterator[str]:
    position = {op.name: i for i, op in enumerate(compiled)}
    for i, op in enumerate(compiled):
        for source in op.call.sources or []:
            at = position.get(source)
            if at is None:
                yield f"{locate(op)}: source {source!r} is not an operator of the flow"
            elif at >= i:
                yield (
                    f"{locate(op)}: source {source!r} is declared after it "
                    "(a forward reference; sources must come first)"
                )


def _check_resource_refs(flow: Flow, compiled: list[CompiledOperator]) -> Iterator[str]:
    declared = sorted(decl.name for decl in flow.resources)
    listing = ", ".join(repr(n) for n in declared) or "none"
    for op in compiled:
        for name in dict.fromkeys(resource_names(op.call.params)):
            if name not in declared:
                yield (
                    f"{locate(op)} needs resource {name!r}, which the flow does not "
                    f"declare with flow.resource() (declared: {listing})"
                )


def _check_resources(flow: Flow, registry: Registry) -> Iterator[str]:
    for decl in flow.resources:
        what = f"resource {decl.name!r} (type {decl.resource_type})"
        schema = registry.get(decl.resource_type)
        specs = schema.params if schema is not None else decl.schema
        if schema is None and not specs:
            hint = did_you_mean(decl.resource_type, [s.name for s in registry.all()])
            yield f"resource {decl.name!r}: unknown resource type {decl.resource_type!r}{hint}"
        else:
            problem = _check_params(what, specs, decl.params)
            if problem:
                yield problem
        yield from _check_json(what, decl.params)


def _check_conditions(flow: Flow, compiled: list[CompiledOperator]) -> Iterator[str]:
    common = set(flow.common_input)
    item = set(flow.item_input)
    for op in compiled:
        if op.branch is not None:
            what = f"control operator {op.name!r} ({op.branch.describe()})"
            for name in op.branch.fields:
                if name in common:
                    continue
                if name in item:
                    yield (
                        f"{what} reads {name!r}, an item field; a condition reads common "
                        "fields (compute one with an operator's common_output first)"
                    )
                else:
                    yield (
                        f"{what} reads common field {name!r}, which is neither in the flow's "
                        "common_input nor written (common_output) by an earlier operator"
                    )
        common.update(op.call.common_output)
        item.update(op.call.item_output)


def _check_control_writes(compiled: list[CompiledOperator]) -> Iterator[str]:
    control = {out for op in compiled if op.branch is not None for out in op.call.common_output}
    for op in compiled:
        if op.branch is None:
            for name in sorted(control.intersection(op.call.common_output)):
                yield (
                    f"{locate(op)} writes {name!r}, the control field of a branch "
                    "(only its control operator may write it)"
                )


def _check_dataflow(
    flow: Flow, compiled: list[CompiledOperator], operators: OperatorRegistry
) -> Iterator[str]:
    """Apple's field checks (``_dataflow``) and the sub-flow contracts."""
    scope = Scope(
        label="flow contract",
        common_input=flow.common_input,
        item_input=flow.item_input,
        common_output=flow.common_output,
        item_output=flow.item_output,
    )
    yield from check_underscore_outputs(flow, compiled)
    yield from check_coverage(scope, compiled)
    yield from check_write_without_read(compiled, operators)
    yield from check_data_parallel(compiled, operators)
    yield from check_param_metadata(compiled)
    if not flow.skip_dead_code:
        yield from check_dead_operators(scope, compiled, operators)
    yield from check_subflow_contracts(flow, compiled, operators)


def check_flow(
    flow: Flow,
    compiled: list[CompiledOperator],
    pipelines: Mapping[str, list[str]],
    *,
    open_blocks: Sequence[str] = (),
    operators: OperatorRegistry,
    resources: Registry,
    reserved_keys: frozenset[str],
) -> None:
    """Raise :class:`ValidationError` listing every problem of the flow (no-op when none)."""
    problems: list[str] = list(open_blocks)
    if not compiled:
        problems.append(f"flow {flow.name!r} has no operators")
    problems += [
        f"operator name {op.name!r} is also a sub-flow path"
        for op in compiled
        if op.name in pipelines
    ]
    problems += [
        f"sub-flow {path!r} has no operators or sub-flows"
        for path, names in pipelines.items()
        if path and not names
    ]
    problems += _check_operators(compiled, operators, reserved_keys)
    problems += _check_sources(compiled)
    problems += _check_resource_refs(flow, compiled)
    problems += _check_resources(flow, resources)
    problems += _check_conditions(flow, compiled)
    problems += _check_control_writes(compiled)
    problems += _check_dataflow(flow, compiled, operators)
    if problems:
        problems = [_with_location(p, compiled) for p in problems]
        raise ValidationError(_summary(flow.name, problems), problems)


_NAMED = re.compile(r"(?:control )?operator ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
"""A message about one operator starts with its name (as ``repr`` wrote it)."""


def _with_location(problem: str, compiled: Sequence[CompiledOperator]) -> str:
    """``problem``, plus where the operator it names was declared (``defined at: f.py:12 ...``).

    Names are unique in a compiled flow, so the name a message starts with is
    the operator; control operators carry their condition instead (``[if] x``).
    Bounded: one regex match at the start of the message (linear, no nesting).
    """
    found = _NAMED.match(problem)
    if found is None:
        return problem
    for op in compiled:
        if repr(op.name) == found.group(1) and op.call.code_info and op.branch is None:
            return f"{problem} (defined at: {op.call.code_info})"
    return problem


def _summary(name: str, problems: list[str]) -> str:
    if len(problems) == 1:
        problem = problems[0]
        named = problem.startswith(f"flow {name!r}")
        return problem if named else f"flow {name!r}: {problem}"
    lines = "\n".join(f"  - {p}" for p in problems)
    return f"flow {name!r} has {len(problems)} problems:\n{lines}"
