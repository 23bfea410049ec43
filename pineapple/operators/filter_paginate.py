"""``filter_paginate``: keeps the items of one page (page and size from common fields)."""

from __future__ import annotations

from typing import Any

from .._context import Context
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["SCHEMA", "FilterPaginate"]

SCHEMA = OperatorSchema(
    name="filter_paginate",
    kind="filter",
    description="Keeps only items in the [page*size, page*size+size) range, removes the rest.",
)


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


class FilterPaginate(Operator):
    """Page ``common_input[0]`` (0-based) of size ``common_input[1]`` (default 10)."""

    consumes_row_set = True
    mutates_row_set = True

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        n = len(inp)
        fields = self.meta.common_input
        if n == 0 or len(fields) < 2:
            return
        page = max(_int(inp.common.get(fields[0])), 0)
        size = _int(inp.common.get(fields[1]))
        if size <= 0:
            size = 10
        start = page * size
        end = min(start + size, n)
        out.remove_items(range(0, min(start, n)))  # before the page
        out.remove_items(range(end, n))  # after it (empty when the page starts past n)


register_operator(SCHEMA, FilterPaginate)
