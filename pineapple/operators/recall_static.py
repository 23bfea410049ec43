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

ROOM = 4
"""Fields a recalled item may gain downstream before its table grows (one resize per copy)."""

_ROOM_TRIES = 24
"""Most placeholder counts :func:`_with_room` tries (enough for rows of up to 40 fields;
a larger row keeps its smallest table)."""

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


def _with_room(row: dict[str, Any], source: str) -> dict[str, Any]:
    """``row`` and its ``_source`` (the engine's value), in a table with room for :data:`ROOM`.

    A copy of a dict has the table of the dict it copies, and a full table
    is rebuilt on the next write: each copy of a full template would be
    rebuilt once by the engine's writes. The smallest table is tried first
    (the keys of ``row`` and ``_source``); if a copy of it would grow
    within ROOM writes, placeholders are added and popped again (popping
    never shrinks a table), one more each try, until one would not. The
    copies hold the row's keys in its order, ``_source`` last (where the
    engine's write puts it) unless the row has it already.
    """
    smallest = {**row, SOURCE_FIELD: source}
    free = [k for k in (f"\0{j}" for j in range(len(smallest) + _ROOM_TRIES)) if k not in smallest]
    for extra in range(_ROOM_TRIES):  # bounded: _ROOM_TRIES tries of ROOM + extra inserts
        roomy = smallest.copy()
        for key in free[:extra]:
            roomy[key] = None
        for _ in range(extra):  # the last keys in, the first out: the placeholders
            roomy.popitem()
        probe = roomy.copy()
        size = sys.getsizeof(probe)
        for key in free[:ROOM]:
            probe[key] = None
        if sys.getsizeof(probe) == size:
            return roomy
    return smallest


def _finite(row: dict[str, Any]) -> bool:
    return all(type(v) is not float or math.isfinite(v) for v in row.values())


class RecallStatic(Operator):
    """Adds a copy of every configured item on each request (with its ``_source``)."""

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
        self.items: list[dict[str, Any]] = []
        """The templates (``prepare``): each row with ``_source``, roomy (``_with_room``)."""
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

    def prepare(self) -> None:
        source = sys.intern(self.name)
        self.items = [_with_room(row, source) for row in self.rows]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        for field, value in self.set_common.items():
            out.set_common(field, value)
        if self.items:
            copies = [row.copy() for row in self.items]  # bounded: the configured items
            out.add_items(copies, checked=self.checked, fields=self.fields, source=self.name)


register_operator(SCHEMA, RecallStatic)
