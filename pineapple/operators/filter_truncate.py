"""``filter_truncate``: keeps the first ``top_n`` items."""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import go_type_name
from ..engine._template import is_template

__all__ = ["SCHEMA", "FilterTruncate"]

SCHEMA = OperatorSchema(
    name="filter_truncate",
    kind="filter",
    description="Keeps only the first N items, removing the rest.",
    params={
        "top_n": ParamSpec(
            type="int",
            required=True,
            templatable=True,
            description="Number of items to keep. Supports {{field}} interpolation.",
        ),
    },
)


class FilterTruncate(Operator):
    """Removes every item from position ``top_n`` on."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        raw = params["top_n"]
        if isinstance(raw, bool) or not (isinstance(raw, int | float) or is_template(raw)):
            raise ValueError(f"filter_truncate: top_n must be numeric, got {go_type_name(raw)}")
        self.top_n = 0 if isinstance(raw, str) else int(raw)
        if self.top_n < 0:
            raise ValueError(f"filter_truncate: top_n must be non-negative, got {self.top_n}")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        top_n = inp.templated.get("top_n", self.top_n)
        if top_n < 0:
            raise ValueError(f"filter_truncate: top_n must be non-negative, got {top_n}")
        n = len(inp)
        if n > top_n:
            out.remove_items(range(top_n, n))


register_operator(SCHEMA, FilterTruncate)
