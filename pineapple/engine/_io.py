"""What an operator reads (``OperatorInput``) and what it writes (``OperatorOutput``).

Both are built once per operator per request and are cheap: the input wraps
the request frame's live rows without copying them, and the output records
writes that the engine validates and applies after ``execute`` returns.

Rules for operators:

- Treat everything reachable from an ``OperatorInput`` as read-only: ``items``
  are the frame's own row dicts, shared with later operators.
- Express every change through the ``OperatorOutput``. A dict passed to
  ``add_item``/``add_items`` and a list passed to ``set_column`` or
  ``set_item_order`` belong to the engine afterwards: do not keep or mutate them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mypy_extensions import mypyc_attr

from ._pieces import PIECE, pieces, spans

__all__ = ["OperatorInput", "OperatorOutput"]

_EMPTY: Mapping[str, Any] = {}


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
class OperatorInput:
    """Read-only view of the request frame for one operator invocation.

    ``common``: the declared ``common_input`` fields (engine-internal skip and
    template fields removed, ``common_defaults`` applied). ``items``: the
    frame's rows, in order. ``templated``: per-request values of
    ``{{field}}``-templated params, by param name (empty when none).

    >>> inp = OperatorInput({"page": 0}, [{"id": "a"}, {"id": "b"}])
    >>> len(inp), inp.column("id"), inp.item(1, "id")
    (2, ['a', 'b'], 'b')
    """

    __slots__ = ("common", "item_defaults", "items", "templated")

    def __init__(
        self,
        common: Mapping[str, Any] | None = None,
        items: list[dict[str, Any]] | None = None,
        *,
        templated: Mapping[str, Any] | None = None,
        item_defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.common: Mapping[str, Any] = common if common is not None else _EMPTY
        self.items: list[dict[str, Any]] = items if items is not None else []
        self.templated: Mapping[str, Any] = templated if templated is not None else _EMPTY
        self.item_defaults: Mapping[str, Any] = (
            item_defaults if item_defaults is not None else _EMPTY
        )

    def __len__(self) -> int:
        return len(self.items)

    @property
    def item_count(self) -> int:
        """The number of items."""
        return len(self.items)

    def get_common(self, field: str, default: Any = None) -> Any:
        """A common field's value (None when absent)."""
        return self.common.get(field, default)

    def item(self, index: int, field: str) -> Any:
        """One item field (the item default when the value is None/absent)."""
        if index < 0 or index >= len(self.items):
            return None
        value = self.items[index].get(field)
        if value is None and field in self.item_defaults:
            return self.item_defaults[field]
        return value

    def column(self, field: str) -> list[Any]:
        """Every item's value of ``field`` (None when absent, item default applied).

        A fresh list: the operator may keep or change it.
        """
        items = self.items
        default = self.item_defaults.get(field)
        n = len(items)
        if n <= PIECE:
            return _column(items, field, default, 0, n)
        col: list[Any] = []
        for start, end in spans(n):  # bounded: n / PIECE pieces
            col += _column(items, field, default, start, end)
        return col


def _column(
    items: list[dict[str, Any]], field: str, default: Any, start: int, end: int
) -> list[Any]:
    """``field`` of ``items[start:end]`` (a plain loop: compiled to C by mypyc)."""
    if start == 0 and end == len(items):
        col = [row.get(field) for row in items]
    else:
        col = [items[i].get(field) for i in range(start, end)]
    if default is not None:
        return [default if v is None else v for v in col]
    return col


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
class OperatorOutput:
    """Collects one invocation's writes; the engine validates and applies them.

    What each operator kind may use (others are a type violation):
    recall: ``set_common``, ``add_item(s)``; transform: ``set_common``,
    ``set_item``/``set_column``; filter: ``remove_item(s)``; merge:
    ``set_item``/``set_column``, ``remove_item(s)``; reorder:
    ``set_item_order``; observe: nothing. ``warn`` is always allowed.
    """

    __slots__ = (
        "added_fields",
        "added_items",
        "added_source",
        "column_writes",
        "common_writes",
        "fills",
        "finite_added",
        "item_order",
        "item_writes",
        "removed",
        "warning",
    )

    def __init__(self) -> None:
        self.common_writes: dict[str, Any] | None = None
        self.item_writes: list[tuple[int, str, Any]] | None = None
        self.column_writes: list[tuple[str, list[Any]]] | None = None
        self.fills: list[tuple[Any, int]] | None = None
        """The value and item count of each ``fill_column`` (the answer's bound counts them)."""
        self.added_items: list[dict[str, Any]] | None = None
        self.added_fields: frozenset[str] = frozenset()
        self.added_source: str | None = None
        self.finite_added = True
        self.removed: set[int] | None = None
        self.item_order: list[int] | None = None
        self.warning: str | None = None

    def set_common(self, field: str, value: Any) -> None:
        """Write a common field."""
        if self.common_writes is None:
            self.common_writes = {field: value}
        else:
            self.common_writes[field] = value

    def set_item(self, index: int, field: str, value: Any) -> None:
        """Write one item field (prefer ``set_column`` for whole columns)."""
        if self.item_writes is None:
            self.item_writes = []
        self.item_writes.append((index, field, value))

    def set_column(self, field: str, values: list[Any]) -> None:
        """Write ``field`` on every item at once: ``values[i]`` goes to item ``i``.

        ``len(values)`` must equal the item count. Applied after ``set_item``
        writes. The list belongs to the engine afterwards.
        """
        if self.column_writes is None:
            self.column_writes = []
        self.column_writes.append((field, values))

    def fill_column(self, field: str, value: Any, count: int) -> None:
        """Write the one ``value`` on every item (``count``: the item count).

        The same as ``set_column(field, [value] * count)``, and the way to copy a
        value onto every item: a run with an answer bound
        (``Engine.run(max_answer_bytes=)``) counts the value's size once, times
        ``count``, before it is applied.
        """
        self.set_column(field, [value] * count)
        if self.fills is None:
            self.fills = []
        self.fills.append((value, count))

    def add_item(self, fields: dict[str, Any]) -> None:
        """Append a new item (recall). The dict belongs to the engine afterwards."""
        if self.added_items is None:
            self.added_items = []
        self.added_items.append(fields)
        self.finite_added = False
        self.added_fields = frozenset()

    def add_items(
        self,
        items: Iterable[dict[str, Any]],
        *,
        checked: bool = False,
        fields: frozenset[str] = frozenset(),
        source: str | None = None,
    ) -> None:
        """Append new items (recall); the dicts belong to the engine afterwards.

        Optional promises that spare the engine per-value work:
        ``checked=True``: the values hold no NaN or infinity (e.g. validated
        when the config was loaded); ``fields``: keys that every one of these
        items has; ``source``: the ``_source`` every one of them holds already
        (a recall step's items get its name there; the engine writes it only
        where this is not the step's name).
        """
        if self.added_items is None:
            self.added_items = list(items)
            self.finite_added = checked
            self.added_fields = fields
            self.added_source = source
        else:
            self.added_items.extend(items)
            self.finite_added = self.finite_added and checked
            self.added_fields = self.added_fields & fields
            if self.added_source != source:
                self.added_source = None

    def remove_item(self, index: int) -> None:
        """Remove the item at ``index`` (indices refer to the input order)."""
        if self.removed is None:
            self.removed = {index}
        else:
            self.removed.add(index)

    def remove_items(self, indices: Iterable[int]) -> None:
        """Remove every item in ``indices``."""
        removed = self.removed
        if removed is None:
            removed = self.removed = set()
        if isinstance(indices, range | list | tuple) and len(indices) > PIECE:
            for part in pieces(indices):  # bounded: len(indices) / PIECE pieces
                removed.update(part)
        else:
            removed.update(indices)

    def set_item_order(self, order: list[int]) -> None:
        """Reorder: new position ``k`` holds old item ``order[k]`` (a permutation)."""
        self.item_order = order

    def warn(self, message: str | BaseException) -> None:
        """Record a recoverable problem; the first warning of an invocation wins."""
        if self.warning is None:
            self.warning = str(message)

    # -- read access (the engine, tests and fixture runners) ----------------

    def item_write_map(self) -> dict[int, dict[str, Any]]:
        """Item writes folded per index (column writes applied last)."""
        out: dict[int, dict[str, Any]] = {}
        for index, field, value in self.item_writes or ():
            out.setdefault(index, {})[field] = value
        for field, values in self.column_writes or ():
            for index, value in enumerate(values):
                out.setdefault(index, {})[field] = value
        return out

    def used(self) -> tuple[bool, bool, bool, bool, bool]:
        """Which kinds of writes were made: common, item, add, remove, reorder."""
        return (
            bool(self.common_writes),
            bool(self.item_writes) or bool(self.column_writes),
            bool(self.added_items),
            bool(self.removed),
            self.item_order is not None,
        )
