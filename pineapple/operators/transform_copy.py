"""``transform_copy``: copies values between common and item fields, pairwise by position."""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["SCHEMA", "TransformCopy"]

DIRECTIONS = ("common_to_item", "item_to_common", "common_to_common", "item_to_item")

SCHEMA = OperatorSchema(
    name="transform_copy",
    kind="transform",
    description="Copies field values between common and item dimensions.",
    params={
        "direction": ParamSpec(
            type="string",
            required=True,
            description='Copy direction: "common_to_item", "item_to_common", '
            '"common_to_common", or "item_to_item".',
        ),
    },
)


class TransformCopy(Operator):
    """The i-th input field of one side is copied to the i-th output field of the other."""

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        direction = params["direction"]
        if direction not in DIRECTIONS:
            raise ValueError(f'transform_copy: unsupported direction "{direction}"')
        self.direction: str = direction

    def prepare(self) -> None:
        m = self.meta
        src = m.common_input if self.direction.startswith("common") else m.item_input
        dst = m.common_output if self.direction.endswith("to_common") else m.item_output
        if len(dst) < len(src):
            raise ValueError(
                f"transform_copy: {self.direction} needs an output field for each of "
                f"{len(src)} input fields, got {len(dst)}"
            )
        self.pairs = tuple(zip(src, dst, strict=False))

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        direction = self.direction
        if direction == "common_to_common":
            for src, dst in self.pairs:
                out.set_common(dst, inp.common.get(src))
        elif direction == "common_to_item":
            n = len(inp)
            for src, dst in self.pairs:
                out.fill_column(dst, inp.common.get(src), n)
        elif direction == "item_to_item":
            for src, dst in self.pairs:
                out.set_column(dst, inp.column(src))
        else:
            for src, dst in self.pairs:
                out.set_common(dst, inp.column(src))


register_operator(SCHEMA, TransformCopy)
