"""Advice on flows that compile but likely answer wrong: today, the top-k trap.

A recall that pages (its type has ``order_by`` and ``default_size`` params,
as ``recall_feed_data``) returns at most one page of rows, in load order
unless it is given ``order_by``. A flow that then sorts (a ``reorder``
operator) and truncates (a filter with ``top_n``) ranks that first page only:
for any match with more rows than a page, the "top N" it answers is not the
top N of the table. ``pineapple compile`` prints each piece of advice as a
warning; :func:`advice` returns them.
"""

from __future__ import annotations

from pineapple import builtins
from pineapple.engine import OperatorRegistry, OperatorSchema

from ._compile import flatten
from ._flow import Flow
from ._ir import CompiledOperator

__all__ = ["advice"]


def _first(
    ops: list[tuple[CompiledOperator, OperatorSchema | None]], start: int, kind: str, param: str
) -> int | None:
    """Index of the first operator at or after ``start`` of ``kind`` (with ``param``, if any)."""
    for j in range(start, len(ops)):
        schema = ops[j][1]
        if schema is not None and schema.kind == kind and (not param or param in schema.params):
            return j
    return None


def advice(flow: Flow, *, operators: OperatorRegistry | None = None) -> list[str]:
    """Warnings about ``flow`` (empty when none).

    Bounded: for each paging recall, one scan of the operators after it.
    """
    registry = operators or builtins.operator_registry()
    compiled, _ = flatten(flow)
    ops = [(op, registry.get(op.call.type_name)) for op in compiled]
    found: list[str] = []
    for i, (op, schema) in enumerate(ops):
        if schema is None or schema.kind != "recall":
            continue
        if not {"order_by", "default_size"} <= set(schema.params) or op.call.params.get("order_by"):
            continue
        sort = _first(ops, i + 1, "reorder", "")
        cut = None if sort is None else _first(ops, sort + 1, "filter", "top_n")
        if sort is None or cut is None:
            continue
        size = op.call.params.get("default_size", schema.params["default_size"].default)
        where = f" (defined at: {op.call.code_info})" if op.call.code_info else ""
        found.append(
            f"operator {op.name!r} ({op.call.type_name}) returns one page of at most "
            f"{size} rows in load order, then {ops[sort][0].name!r} sorts and "
            f"{ops[cut][0].name!r} truncates them: the top rows come from that first page "
            f"only. Give the recall order_by= (and descending=) to page in ranking order{where}"
        )
    return found
