"""``merge_dedup``: removes items whose key field repeats an earlier item's."""

from __future__ import annotations

import math
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import go_json
from ..engine._pieces import PIECE, spans

__all__ = ["SCHEMA", "MergeDedup", "dedup_key"]

SCHEMA = OperatorSchema(
    name="merge_dedup",
    kind="merge",
    description="Deduplicates items by a key field, keeping the first occurrence.",
    params={
        "strategy": ParamSpec(
            type="string",
            default="first",
            description='Dedup strategy — "first" keeps first occurrence.',
        ),
    },
)

_EXACT = 2**53


def dedup_key(value: Any) -> Any:
    """A hashable key: equal for values the public engines treat as one.

    Numbers compare as float64 (``1`` == ``1.0``, ``-0.0`` == ``0``), a string
    never equals a number or a bool, composites compare by their JSON text.
    """
    t = type(value)
    if t is str:
        return value
    if t is float:
        return value if value == value else ("F", "NaN")
    if t is int:
        return value if -_EXACT <= value <= _EXACT else float(value)
    if t is bool:
        return ("B", value)
    if value is None:
        return ("N",)
    if isinstance(value, float):
        return float(value) if not math.isnan(value) else ("F", "NaN")
    return ("O", go_json(value))


class MergeDedup(Operator):
    """Keeps the first item of each distinct ``item_input[0]`` value."""

    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        if params["strategy"] != "first":
            raise ValueError(f'merge_dedup: unsupported strategy "{params["strategy"]}"')

    def prepare(self) -> None:
        # Go fails every request without the field (even with no items): refuse the config.
        self.field = self.meta.first("item_input", "merge_dedup")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        col = inp.column_view(self.field)  # read, not kept
        n = len(col)
        strings = _all_str(col)
        if strings and len(set(col)) == n:  # the usual case: no repeats, nothing removed
            return
        keys = col if strings else [dedup_key(v) for v in col]
        # Key -> its first index (assignments run from the back, so the first wins).
        first = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))
        if len(first) == n:
            return
        kept = set(first.values())
        out.remove_items([i for i in range(n) if i not in kept])


def _all_str(values: list[Any]) -> bool:
    """Every value is a ``str`` (their own keys: equal exactly when the engines say so).

    A plain loop (compiled: one type test per value), piece by piece past ``PIECE``.
    """
    n = len(values)
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for v in values[a:b] if n > PIECE else values:  # compiled: no index per value
            if type(v) is not str:
                return False
    return True


register_operator(SCHEMA, MergeDedup)
