"""``transform_dispatch``: copies one common field onto every item."""

from __future__ import annotations

from .._context import Context
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["SCHEMA", "TransformDispatch"]

SCHEMA = OperatorSchema(
    name="transform_dispatch",
    kind="transform",
    description="Copies a common-side field value to every item as an item-side field.",
)


class TransformDispatch(Operator):
    """``item[item_output[0]] = common[common_input[0]]`` for every item."""

    concurrent_safe = True

    def prepare(self) -> None:
        m = self.meta
        self.src = m.common_input[0] if m.common_input else None
        self.dst = m.item_output[0] if m.item_output else None

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        if self.src is None or self.dst is None:
            return
        out.fill_column(self.dst, inp.common.get(self.src), len(inp))


register_operator(SCHEMA, TransformDispatch)
