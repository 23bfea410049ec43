"""``transform_size``: writes the current item count to a common field."""

from __future__ import annotations

from .._context import Context
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["SCHEMA", "TransformSize"]

SCHEMA = OperatorSchema(
    name="transform_size",
    kind="transform",
    description="Outputs the current item count to a common field.",
)


class TransformSize(Operator):
    """``common_output[0] = len(items)``."""

    concurrent_safe = True
    consumes_row_set = True

    def prepare(self) -> None:
        self.dst = self.meta.first("common_output", "transform_size")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        out.set_common(self.dst, len(inp))


register_operator(SCHEMA, TransformSize)
