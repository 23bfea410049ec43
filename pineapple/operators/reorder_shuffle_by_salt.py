"""``reorder_shuffle_by_salt``: deterministic shuffle keyed by a caller-provided salt."""

from __future__ import annotations

from .._context import Context
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ._salted_hash import salt_text, salted_rank

__all__ = ["SCHEMA", "ReorderShuffleBySalt"]

SCHEMA = OperatorSchema(
    name="reorder_shuffle_by_salt",
    kind="reorder",
    description="Deterministic hash-based shuffle using a caller-provided salt.",
)


class ReorderShuffleBySalt(Operator):
    """Orders items by FNV-1a of ``"<common inputs joined by |>|<item_input[0]>"``."""

    consumes_row_set = True
    mutates_row_set = True

    def prepare(self) -> None:
        # As Go: the field is needed (and its absence fails the request) only with items.
        self.field = self.meta.item_input[0] if self.meta.item_input else ""

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        if len(inp) == 0:
            return
        if not self.field:
            raise ValueError("reorder_shuffle_by_salt: $metadata.item_input needs one field")
        prefix = "|".join(salt_text(inp.common.get(f)) for f in self.meta.common_input) + "|"
        out.set_item_order(salted_rank(prefix, inp.column_view(self.field)), checked=True)


register_operator(SCHEMA, ReorderShuffleBySalt)
