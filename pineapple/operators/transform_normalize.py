"""``transform_normalize``: min-max scales a numeric item field to [0, 1]."""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import (
    PIECE,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
    pieces,
    register_operator,
)
from ..engine._gofmt import go_type_name
from ..engine._pieces import spans

__all__ = ["SCHEMA", "TransformNormalize", "numbers"]

SCHEMA = OperatorSchema(
    name="transform_normalize",
    kind="transform",
    description="Normalizes a numeric item field using min-max scaling to [0, 1].",
    params={
        "method": ParamSpec(type="string", default="min_max", description="Normalization method."),
    },
)


def numbers(op: str, field: str, values: list[Any]) -> list[Any]:
    """``values`` when every one is an int or float (bools are not numbers); else raises."""
    if len(values) <= PIECE:
        kinds = set(map(type, values))
    else:
        kinds = set()
        for part in pieces(values):  # bounded: len(values) / PIECE pieces
            kinds.update(map(type, part))
    if kinds <= {float, int}:
        return values
    for i, v in enumerate(values):
        if type(v) is not float and type(v) is not int:
            raise TypeError(f"{op}: item[{i}].{field}: cannot convert {go_type_name(v)} to float64")
    return values


class TransformNormalize(Operator):
    """``out = (v - min) / (max - min)``; all zeros when every value is equal."""

    def __init__(self, params: dict[str, Any]) -> None:
        if params["method"] != "min_max":
            raise ValueError(f'transform_normalize: unsupported method "{params["method"]}"')

    def prepare(self) -> None:
        # As Go: only ``method`` is checked at init; the fields are needed
        # (and a missing one fails the request) only when there are items.
        self.src = self.meta.item_input[0] if self.meta.item_input else ""
        self.dst = self.meta.item_output[0] if self.meta.item_output else ""

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        if not inp.items:
            return
        for field, kind in ((self.src, "item_input"), (self.dst, "item_output")):
            if not field:
                raise ValueError(f"transform_normalize: $metadata.{kind} needs one field")
        vals = numbers("transform_normalize", self.src, inp.column(self.src))
        lo, hi = min(vals), max(vals)
        span = float(hi - lo)
        if span == 0:
            out.set_column(self.dst, [0.0] * len(vals))
        else:
            out.set_column(self.dst, _scaled(vals, lo, span))


def _scaled(vals: list[Any], lo: Any, span: float) -> list[float]:
    """``(v - lo) / span`` of every value, piece by piece past ``PIECE`` (compiled: a C loop)."""
    n = len(vals)
    if n <= PIECE:
        return [(v - lo) / span for v in vals]
    col: list[float] = []
    for a, b in spans(n):  # bounded: n / PIECE pieces; the GIL may pass between two
        col += [(vals[i] - lo) / span for i in range(a, b)]
    return col


register_operator(SCHEMA, TransformNormalize)
