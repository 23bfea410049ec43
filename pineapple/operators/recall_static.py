"""``recall_static``: emits a fixed list of items (and optionally fixed common fields)."""

from __future__ import annotations

import math
import sys
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._frame import SOURCE_FIELD
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
    """Adds the configured items on each request (with its ``_source``).

    Items that all have the same fields are kept as columns, ``_source``
    among them, and added as those lists (the engine never changes them):
    a request costs a list append per field, not a dict per item.
    """

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
        self.rows: list[dict[str, Any]] = [_interned(row) for row in raw]
        self.checked = all(_finite(row) for row in raw)
        common = params.get("set_common")
        if common is not None and not isinstance(common, dict):
            raise ValueError(
                f"recall_static: 'set_common' must be a JSON object, got {go_type_name(common)}"
            )
        self.set_common: dict[str, Any] = common or {}
        self.columns: dict[str, list[Any]] | None = None
        """The items as columns with ``_source`` (``prepare``), when they share their fields."""
        self.items: list[dict[str, Any]] = []
        """Otherwise the items with ``_source``, copied on each request."""

    def prepare(self) -> None:
        source = sys.intern(self.name)
        rows = self.rows
        fields = list(rows[0]) if rows else []
        if rows and all(len(row) == len(fields) and all(f in row for f in fields) for row in rows):
            self.columns = {f: [row[f] for row in rows] for f in fields}
            self.columns[SOURCE_FIELD] = [source] * len(rows)
        else:
            self.items = [{**row, SOURCE_FIELD: source} for row in rows]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        for field, value in self.set_common.items():
            out.set_common(field, value)
        if self.columns is not None:
            out.add_columns(self.columns, len(self.rows), checked=self.checked, source=self.name)
        elif self.items:
            copies = [row.copy() for row in self.items]  # bounded: the configured items
            out.add_items(copies, checked=self.checked, source=self.name)


register_operator(SCHEMA, RecallStatic)
