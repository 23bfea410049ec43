"""``reorder_topn_boost``: moves ``size`` salted-hash-chosen items to the front."""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._salted_hash import boosted_order, salt_text

__all__ = ["SCHEMA", "ReorderTopnBoost"]

SCHEMA = OperatorSchema(
    name="reorder_topn_boost",
    kind="reorder",
    description="Boosts the top-N items by salted hash of their id to the front; "
    "the rest keep their order.",
    params={
        "size": ParamSpec(type="int", default=10, description="Number of items to boost."),
        "bench_profile": ParamSpec(
            type="any", description="Accepted for config compatibility; ignored."
        ),
    },
)


class ReorderTopnBoost(Operator):
    """Ranks items by FNV-1a of ``"<shuffle_salt>|<id>"``; boosts the first ``size``."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        size = params["size"]
        self.size = (
            int(size) if isinstance(size, int | float) and not isinstance(size, bool) else 10
        )

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        n = len(inp)
        if n == 0:
            return
        prefix = salt_text(inp.common.get("shuffle_salt")) + "|"
        # The rows' own ids: an item default of "id" is not applied (read from the
        # rows only then; the column view, read only, is the cheap one).
        ids = inp.column_view("id") if "id" not in inp.item_defaults else _raw_ids(inp)
        out.set_item_order(boosted_order(prefix, ids, self.size), checked=True)


def _raw_ids(inp: OperatorInput) -> list[Any]:
    """Every row's own ``id`` (None when absent), item defaults not applied."""
    return [row.get("id") for row in inp.items]


register_operator(SCHEMA, ReorderTopnBoost)
