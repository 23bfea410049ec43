"""``recall_static``: emits a fixed list of items (and optionally fixed common fields)."""

from __future__ import annotations

import math
import sys
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import go_type_name

__all__ = ["SCHEMA", "RecallStatic"]

SCHEMA = OperatorSchema(
    name="recall_static",
    kind="recall",
    description="Emits a configurable static set of items for testing and validation.",
    params={
        "items": ParamSpec(
            type="any", required=True, description="JSON array of item maps to emit as candidates."
        ),
        "set_common": ParamSpec(
            type="any", description="JSON object of common fields the recall writes."
        ),
    },
)


def _interned(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its string keys interned (same keys, order and values)."""
    return {sys.intern(k) if type(k) is str else k: v for k, v in row.items()}


def _finite(row: dict[str, Any]) -> bool:
    return all(type(v) is not float or math.isfinite(v) for v in row.values())


class RecallStatic(Operator):
    """Adds a copy of every configured item on each request."""

    additive_writes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        raw = params["items"]
        if not isinstance(raw, list):
            raise ValueError(
                f"recall_static: 'items' must be a JSON array, got {go_type_name(raw)}"
            )
        for i, row in enumerate(raw):
            if not isinstance(row, dict):
                raise ValueError(
                    f"recall_static: items[{i}] must be an object, got {go_type_name(row)}"
                )
        # Interned keys: the engine looks fields up by its interned names (``_config``).
        self.items: list[dict[str, Any]] = [_interned(row) for row in raw]
        self.checked = all(_finite(row) for row in raw)
        self.fields: frozenset[str] = (
            frozenset(raw[0]).intersection(*raw[1:]) if raw else frozenset()
        )
        common = params.get("set_common")
        if common is not None and not isinstance(common, dict):
            raise ValueError(
                f"recall_static: 'set_common' must be a JSON object, got {go_type_name(common)}"
            )
        self.set_common: dict[str, Any] = common or {}

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        for field, value in self.set_common.items():
            out.set_common(field, value)
        if self.items:
            out.add_items(
                list(map(dict.copy, self.items)), checked=self.checked, fields=self.fields
            )


register_operator(SCHEMA, RecallStatic)
