"""SubFlow contracts: a sub-flow's declared inputs, outputs and resources hold at its boundary.

``SubFlow("score", item_input=["ctr"], item_output=["score"],
required_resources=["weights"])`` promises that its operators (and those of
its nested sub-flows, which are bound by the outer contract too) read only
``ctr`` or fields written inside it, that each of them writes something read
inside it or listed in ``item_output``, and that the flow declares
``weights``. A contract list left ``None`` is not checked (Apple's rule).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pineapple.engine import OperatorRegistry

from ._dataflow import Scope, check_coverage, check_dead_operators

if TYPE_CHECKING:
    from ._flow import Flow, SubFlow, _Node
    from ._ir import CompiledOperator

__all__ = ["check_subflow_contracts", "subflows"]


def subflows(flow: Flow) -> list[tuple[str, SubFlow]]:
    """Every sub-flow placed in ``flow``, with its path, parents first.

    Bounded by the tree: each sub-flow object is visited once (placing one
    twice is reported by ``flatten`` before this runs).
    """
    from ._flow import SubFlowEntry

    found: list[tuple[str, SubFlow]] = []
    seen: set[int] = set()
    pending: list[tuple[str, _Node]] = [("", flow)]
    while pending:
        path, node = pending.pop(0)
        for child in node.children:
            if isinstance(child, SubFlowEntry) and id(child.flow) not in seen:
                seen.add(id(child.flow))
                sub_path = f"{path}/{child.flow.name}" if path else child.flow.name
                found.append((sub_path, child.flow))
                pending.append((sub_path, child.flow))
    return found


def _subtree(path: str, ops: Sequence[CompiledOperator]) -> list[CompiledOperator]:
    return [op for op in ops if op.path == path or op.path.startswith(path + "/")]


def check_subflow_contracts(
    flow: Flow, ops: Sequence[CompiledOperator], registry: OperatorRegistry
) -> Iterator[str]:
    """The problems of every sub-flow contract (resources, input coverage, dead operators)."""
    declared = sorted(decl.name for decl in flow.resources)
    for path, sub in subflows(flow):
        for name in sub.required_resources or ():
            if name not in declared:
                yield (
                    f"SubFlow {path!r} requires resource {name!r} but it is not declared "
                    f"with flow.resource() (declared: {declared or 'none'})"
                )
        scope = Scope(
            label=f"SubFlow {path!r} contract",
            common_input=sub.common_input,
            item_input=sub.item_input,
            common_output=sub.common_output,
            item_output=sub.item_output,
        )
        inner = _subtree(path, ops)
        if sub.common_input is not None or sub.item_input is not None:
            yield from check_coverage(scope, inner)
        has_output = sub.common_output is not None or sub.item_output is not None
        if has_output and not flow.skip_dead_code:
            for problem in check_dead_operators(scope, inner, registry):
                yield f"SubFlow {path!r}: {problem}"
