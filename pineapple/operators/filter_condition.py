"""``filter_condition``: removes items whose field equals a value (compared as Go's ``%v`` text)."""

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
    register_operator,
)
from ..engine._gofmt import format_value
from ..engine._pieces import spans

__all__ = ["SCHEMA", "FilterCondition"]

SCHEMA = OperatorSchema(
    name="filter_condition",
    kind="filter",
    description="Removes items where a specified field equals a given value.",
    params={
        "value": ParamSpec(
            type="any", required=True, description="Items where field == value are removed."
        ),
    },
)


class FilterCondition(Operator):
    """Removes item ``i`` when ``fmt(item[item_input[0]]) == fmt(value)``."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.want = format_value(params["value"])

    def prepare(self) -> None:
        self.field = self.meta.first("item_input", "filter_condition")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        col = inp.column_view(self.field)  # read, not kept
        n = len(col)
        drop: list[int] = []
        for a, b in spans(n) if n > PIECE else ((0, n),):  # the GIL may pass between pieces
            _matches(col, self.want, a, b, drop)
        if drop:
            out.remove_items(drop)


def _matches(col: list[Any], want: str, start: int, end: int, drop: list[int]) -> None:
    """Append to ``drop`` the index of every value of ``col[start:end]`` whose text is ``want``."""
    for i, v in enumerate(col if start == 0 and end == len(col) else col[start:end]):
        if v == want if type(v) is str else format_value(v) == want:
            drop.append(start + i)


register_operator(SCHEMA, FilterCondition)
