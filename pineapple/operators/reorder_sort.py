"""``reorder_sort``: stable sort of the items by a numeric field."""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import (
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
    register_operator,
    stable_order,
)
from ..engine._pieces import PIECE
from ._order_kernels import FLOAT_ORDER
from .transform_normalize import numbers

__all__ = ["SCHEMA", "ReorderSort"]

SCHEMA = OperatorSchema(
    name="reorder_sort",
    kind="reorder",
    description="Sorts items by a numeric field in ascending or descending order.",
    params={
        "order": ParamSpec(
            type="string", default="desc", description='Sort direction — "asc" or "desc".'
        ),
    },
)


class ReorderSort(Operator):
    """Orders items by ``item_input[0]``; equal values keep their relative order."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        order = params["order"]
        if order not in ("asc", "desc"):
            raise ValueError(f'reorder_sort: unsupported order "{order}"')
        self.descending = order == "desc"

    def prepare(self) -> None:
        # As Go: the field is needed (and its absence fails the request) only with items.
        self.field = self.meta.item_input[0] if self.meta.item_input else ""
        self.kernel = FLOAT_ORDER  # C, on the compiled core (else None: sorted)

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        n = len(inp)
        if n == 0:
            return
        if not self.field:
            raise ValueError("reorder_sort: $metadata.item_input needs one field")
        vals = numbers("reorder_sort", self.field, inp.column_view(self.field))  # read only
        kernel = self.kernel
        ordered = kernel(vals, self.descending) if kernel is not None and n <= PIECE else None
        if ordered is not None:
            order = ordered
        elif n <= PIECE:  # stable_order's one-piece call, here compiled (no interpreted frame)
            order = sorted(range(n), key=vals.__getitem__, reverse=self.descending)
        else:
            order = stable_order(vals, reverse=self.descending)
        out.set_item_order(order, checked=True)  # sorted(range(n)): a permutation


register_operator(SCHEMA, ReorderSort)
