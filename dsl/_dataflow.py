"""Apple's field checks: every field read has a writer, no write is lost, no operator is dead.

These are the compile-time checks the Apple DSL promises ("dead code,
missing fields, write-after-write detected before deployment"), with
Apple's rules and messages that name the operator (and its sub-flow path)
and the field. Each function returns the problems it finds, in flow order.

Reads of an operator are its ``common_input``, its skip guards and the
``{{field}}`` templates of its params (Apple's three ``common_input``
buckets); fields starting with ``_`` are engine-internal and never need a
writer. Deliberate deviations from Apple are listed in ``dsl/README.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pineapple.engine import OperatorRegistry

from ._condition import MARKER

if TYPE_CHECKING:
    from ._flow import Flow
    from ._ir import CompiledOperator

__all__ = [
    "Scope",
    "check_coverage",
    "check_data_parallel",
    "check_dead_operators",
    "check_param_metadata",
    "check_underscore_outputs",
    "check_write_without_read",
    "common_reads",
    "locate",
]

_PARAM_METADATA_RULES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "transform_resource_lookup": (("lookup_key", "item_input"), ("output_field", "item_output")),
}
"""Params whose value is a field the operator must also declare (Apple's table)."""


@dataclass(frozen=True)
class Scope:
    """Where a coverage or dead-code check starts and ends: the flow, or one sub-flow."""

    label: str  # "flow contract" or "SubFlow 'a/b' contract"
    common_input: Sequence[str] | None
    item_input: Sequence[str] | None
    common_output: Sequence[str] | None
    item_output: Sequence[str] | None


def locate(op: CompiledOperator) -> str:
    """``operator 'x'`` or ``operator 'x' [a/b]`` (its sub-flow path): how messages name it."""
    return f"operator {op.name!r}" + (f" [{op.path}]" if op.path else "")


def common_reads(op: CompiledOperator) -> list[str]:
    """The common fields ``op`` reads: inputs, skip guards, then ``{{field}}`` templates."""
    reads = dict.fromkeys(op.call.common_input)
    reads.update(dict.fromkeys(op.skip))
    for value in op.call.params.values():
        if isinstance(value, str):
            reads.update(dict.fromkeys(MARKER.findall(value)))
    return list(reads)


def _kind(op: CompiledOperator, registry: OperatorRegistry) -> str:
    schema = registry.get(op.call.type_name)
    if schema is not None:
        return schema.kind
    return op.call.type_name.split("_", 1)[0]  # Apple's rule: the type name's prefix


def check_coverage(scope: Scope, ops: Sequence[CompiledOperator]) -> Iterator[str]:
    """Every field an operator reads is in the scope's input contract or written before it.

    A side whose contract is ``None`` is not checked (a sub-flow without
    that contract). Control operators are checked in sub-flow scope only:
    in flow scope the condition check reports them with a better message.
    """
    check_common = scope.common_input is not None
    check_item = scope.item_input is not None
    common = set(scope.common_input or ())
    item = set(scope.item_input or ())
    flow_scope = scope.label == "flow contract"
    for op in ops:
        where = f"{scope.label} or upstream output" + ("" if flow_scope else " within the SubFlow")
        if check_common and not (flow_scope and op.branch is not None):
            for name in common_reads(op):
                if not name.startswith("_") and name not in common:
                    yield f"{locate(op)}: common_input field {name!r} not provided by {where}"
        if check_item:
            for name in op.call.item_input:
                if not name.startswith("_") and name not in item:
                    yield f"{locate(op)}: item_input field {name!r} not provided by {where}"
        common.update(op.call.common_output)
        item.update(op.call.item_output)


def _exclusion_groups(ops: Iterable[CompiledOperator]) -> list[set[str]]:
    """The control fields of each if/elif/else block (at most one of them is taken)."""
    groups: dict[tuple[str, str], set[str]] = {}
    for op in ops:
        if op.branch is not None:
            first = op.branch.prior[0] if op.branch.prior else op.branch.field
            key = (op.path, first.resolve(op.path))
            groups.setdefault(key, set()).update(op.call.common_output)
    return [g for g in groups.values() if len(g) > 1]


def _exclusive(groups: list[set[str]], skip_a: Iterable[str], skip_b: Iterable[str]) -> bool:
    """Two operators sit in different branches of one block (Apple's rule)."""
    a, b = set(skip_a), set(skip_b)
    return any((a & g) and (b & g) and (a & g) != (b & g) for g in groups)


def check_write_without_read(
    ops: Sequence[CompiledOperator], registry: OperatorRegistry
) -> Iterator[str]:
    """A field an earlier operator wrote is written again only by an operator that reads it.

    Exempt: ``_`` fields, writers in different branches of one block, and
    item fields written by a recall (each recall adds its own items). A
    flow-contract input may be overwritten without reading it.
    """
    groups = _exclusion_groups(ops)
    writers: dict[str, dict[str, list[str]]] = {"common": {}, "item": {}}
    for op in ops:
        additive = _kind(op, registry) == "recall"
        sides = (
            ("common", op.call.common_output, set(common_reads(op))),
            ("item", op.call.item_output, set(op.call.item_input)),
        )
        for side, outputs, reads in sides:
            for name in outputs:
                if name.startswith("_"):
                    continue
                prior = writers[side].get(name)
                if (
                    prior is not None
                    and not (side == "item" and additive)
                    and not _exclusive(groups, prior, op.skip)
                    and name not in reads
                ):
                    yield (
                        f"{locate(op)}: writes {side} field {name!r} without reading it "
                        "(field already exists from upstream; write-after-write)"
                    )
                writers[side][name] = list(op.skip)


def check_dead_operators(
    scope: Scope, ops: Sequence[CompiledOperator], registry: OperatorRegistry
) -> Iterator[str]:
    """An operator that writes fields, none of which is read by any operator or in the output.

    Exempt: control operators, recalls, and operators that write nothing
    (observers). In sub-flow scope only the sub-flow's own operators and
    its output contract count as readers.
    """
    needed_common = set(scope.common_output or ())
    needed_item = set(scope.item_output or ())
    for op in ops:
        needed_common.update(common_reads(op))
        needed_item.update(op.call.item_input)
    flow_scope = scope.label == "flow contract"
    where = "in the flow" if flow_scope else "within the SubFlow"
    owner = "the flow's" if flow_scope else "its"
    for op in ops:
        outputs = [*op.call.common_output, *op.call.item_output]
        if op.branch is not None or not outputs or _kind(op, registry) == "recall":
            continue
        if needed_common.intersection(op.call.common_output):
            continue
        if needed_item.intersection(op.call.item_output):
            continue
        yield (
            f"{locate(op)}: dead operator (output not consumed): it writes {outputs}, which "
            f"no operator {where} reads and {owner} output contract does not list"
        )


def check_underscore_outputs(flow: Flow, ops: Sequence[CompiledOperator]) -> Iterator[str]:
    """Fields starting with ``_`` are reserved for control fields; only their writers write them.

    A flow's output contract may not list one. An operator may write one only
    when it is a ``skip_when`` guard of the flow (our deviation from Apple,
    whose flows have no ``skip_when``); control operators are exempt.
    """
    for side, fields in (("common_output", flow.common_output), ("item_output", flow.item_output)):
        for name in fields:
            if name.startswith("_"):
                yield (
                    f"flow {side} field {name!r} starts with '_', which is reserved for "
                    "engine internals"
                )
    control = {out for op in ops if op.branch is not None for out in op.call.common_output}
    guards = {f for op in ops for f in op.skip} - control
    for op in ops:
        if op.branch is not None:
            continue
        for name in op.call.common_output:
            if name.startswith("_") and name not in guards and name not in control:
                yield (
                    f"{locate(op)}: common_output field {name!r} starts with '_', which is "
                    "reserved for engine internals (write it only as a skip_when guard)"
                )
        for name in op.call.item_output:
            if name.startswith("_"):
                yield (
                    f"{locate(op)}: item_output field {name!r} starts with '_', which is "
                    "reserved for engine internals"
                )


def check_data_parallel(
    ops: Sequence[CompiledOperator], registry: OperatorRegistry
) -> Iterator[str]:
    """``data_parallel > 1`` only on transforms that write no common field."""
    for op in ops:
        n = op.call.data_parallel
        if n <= 1:
            continue
        if _kind(op, registry) != "transform":
            yield (
                f"{locate(op)}: data_parallel={n} is only supported for Transform operators, "
                f"got type_name={op.call.type_name!r}"
            )
        elif op.call.common_output:
            yield (
                f"{locate(op)}: data_parallel={n} requires empty common_output for Transform "
                f"operators (it writes {op.call.common_output})"
            )


def check_param_metadata(ops: Sequence[CompiledOperator]) -> Iterator[str]:
    """A param naming a field (``lookup_key``, ``output_field``) is declared in the metadata too."""
    for op in ops:
        for param, side in _PARAM_METADATA_RULES.get(op.call.type_name, ()):
            value: Any = op.call.params.get(param)
            if value and value not in getattr(op.call, side):
                yield f"{locate(op)}: param {param!r}={value!r} must appear in {side}"
