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

_ROOM = 6
"""Placeholders per template: a row of five fields then grows to the table of eleven
(CPython 3.11: 21 entries), room for ``_source`` and nine more fields on each copy."""

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


def _with_room(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (equal: the same keys, order and values) in a table with room for more fields.

    The engine writes ``_source`` on every recalled item and later operators
    add their fields: a copy of a dict has the table of the dict it copies,
    and a table full of the row's own fields is rebuilt on the first write to
    each copy. Placeholders added and popped again leave the table grown
    (popping never shrinks it), so copies take those writes in place.
    """
    roomy = dict(row)
    placeholders = 0
    j = 0
    while placeholders < _ROOM:  # bounded: _ROOM placeholders, a skip per key of the row
        key = f"\0{j}"
        j += 1
        if key not in roomy:
            roomy[key] = None
            placeholders += 1
    for _ in range(placeholders):  # the last keys in, the first out: the placeholders
        roomy.popitem()
    return roomy


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
        self.items: list[dict[str, Any]] = [_with_room(_interned(row)) for row in raw]
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
            copies = [row.copy() for row in self.items]  # bounded: the configured items
            out.add_items(copies, checked=self.checked, fields=self.fields)


register_operator(SCHEMA, RecallStatic)
