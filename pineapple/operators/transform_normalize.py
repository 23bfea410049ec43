"""``transform_normalize``: min-max scales a numeric item field to [0, 1]."""

from __future__ import annotations

from typing import Any, cast

from .._context import Context
from .._params import ParamSpec
from ..engine import (
    PIECE,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
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
    """``values`` when every one is an int or float (bools are not numbers); else raises.

    A plain loop (compiled: one type test per value), piece by piece past ``PIECE``.
    """
    n = len(values)
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for i, v in enumerate(values[a:b] if n > PIECE else values):  # compiled: no index
            if type(v) is not float and type(v) is not int:
                raise TypeError(
                    f"{op}: item[{a + i}].{field}: cannot convert {go_type_name(v)} to float64"
                )
    return values


def float_range(values: list[Any]) -> tuple[float, float, bool] | None:
    """``(min(values), max(values), finite)`` when every value is a float (else None), in
    one pass; ``finite``: no value is a NaN or an infinity.

    The same choice as ``min``/``max`` (the first of equal values wins, a NaN
    is never below or above another value): compiled, native comparisons.
    """
    n = len(values)
    if n == 0 or type(values[0]) is not float:
        return None
    lo: float = values[0]
    hi = lo
    nan = False
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for v in values[a:b] if n > PIECE else values:  # compiled: no index per value
            if type(v) is not float:
                return None
            f: float = v
            if f < lo:
                lo = f
            if f > hi:
                hi = f
            if f != f:
                nan = True
    return lo, hi, not nan and hi - lo - (hi - lo) == 0.0


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
        if not len(inp):
            return
        for field, kind in ((self.src, "item_input"), (self.dst, "item_output")):
            if not field:
                raise ValueError(f"transform_normalize: $metadata.{kind} needs one field")
        vals = inp.column_view(self.src)  # read, not kept
        floats = float_range(vals)
        if floats is not None:  # the usual case: native arithmetic when compiled
            flo, fhi, finite = floats
            fspan = fhi - flo
            if fspan == 0:
                out.set_column(self.dst, [0.0] * len(vals), checked=True)
            else:  # finite values and span: every result is in [0, 1]
                out.set_column(self.dst, _scaled(vals, flo, fspan, floats=True), checked=finite)
            return
        numbers("transform_normalize", self.src, vals)
        lo, hi = min(vals), max(vals)
        span = float(hi - lo)
        if span == 0:
            out.set_column(self.dst, [0.0] * len(vals))
        else:
            out.set_column(self.dst, _scaled(vals, lo, span))


def _scaled(vals: list[Any], lo: Any, span: float, floats: bool = False) -> list[Any]:
    """``(v - lo) / span`` of every value, piece by piece past ``PIECE`` (the GIL may pass
    between two); ``floats``: every value and ``lo`` are floats (compiled: native arithmetic)."""
    n = len(vals)
    if n <= PIECE:
        return _scaled_piece(vals, lo, span, floats)
    col: list[Any] = []
    for a, b in spans(n):  # bounded: n / PIECE pieces
        col += _scaled_piece(vals[a:b], lo, span, floats)
    return col


def _scaled_piece(vals: list[Any], lo: Any, span: float, floats: bool) -> list[Any]:
    if floats:
        flo: float = lo
        return [(v - flo) / span for v in cast(list[float], vals)]
    return [(v - lo) / span for v in vals]


register_operator(SCHEMA, TransformNormalize)
