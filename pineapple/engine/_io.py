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

import math
from collections.abc import Iterable, Mapping
from typing import Any

from mypy_extensions import mypyc_attr

from ._columns import Frame
from ._pieces import PIECE, pieces

__all__ = ["OperatorInput", "OperatorOutput"]

_EMPTY: Mapping[str, Any] = {}


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
class OperatorInput:
    """Read-only view of the request frame for one operator invocation.

    ``common``: the declared ``common_input`` fields (engine-internal skip and
    template fields removed, ``common_defaults`` applied). The items: read a
    field of every item with :meth:`column` (the frame holds columns: the
    cheap way), one value with :meth:`item`, their count with ``len(inp)``;
    ``items`` is the row view, one dict per item, built on first use.
    ``templated``: per-request values of ``{{field}}``-templated params, by
    param name (empty when none).

    >>> inp = OperatorInput({"page": 0}, [{"id": "a"}, {"id": "b"}])
    >>> len(inp), inp.column("id"), inp.item(1, "id"), inp.items[0]
    (2, ['a', 'b'], 'b', {'id': 'a'})
    """

    __slots__ = ("common", "frame", "item_defaults", "templated")

    def __init__(
        self,
        common: Mapping[str, Any] | None = None,
        items: list[dict[str, Any]] | None = None,
        *,
        templated: Mapping[str, Any] | None = None,
        item_defaults: Mapping[str, Any] | None = None,
        frame: Frame | None = None,
    ) -> None:
        self.common: Mapping[str, Any] = common if common is not None else _EMPTY
        self.frame: Frame = (
            frame if frame is not None else Frame.of_rows(items or [], keep_view=True)
        )
        """The request's items (engine-internal: read them through this class)."""
        self.templated: Mapping[str, Any] = templated if templated is not None else _EMPTY
        self.item_defaults: Mapping[str, Any] = (
            item_defaults if item_defaults is not None else _EMPTY
        )

    def __len__(self) -> int:
        return self.frame.count

    @property
    def item_count(self) -> int:
        """The number of items."""
        return self.frame.count

    @property
    def items(self) -> list[dict[str, Any]]:
        """The items as dicts, in order (read-only; built on first use after a change:
        prefer :meth:`column`)."""
        return self.frame.rows()

    @property
    def fields(self) -> list[str]:
        """The item fields that some item has, in the frame's order."""
        return list(self.frame.columns)

    def get_common(self, field: str, default: Any = None) -> Any:
        """A common field's value (None when absent)."""
        return self.common.get(field, default)

    def item(self, index: int, field: str) -> Any:
        """One item field (the item default when the value is None/absent)."""
        value = self.frame.value(index, field)
        if value is None and 0 <= index < self.frame.count:
            return self.item_defaults.get(field)
        return value

    def column(self, field: str) -> list[Any]:
        """Every item's value of ``field`` (None when absent, item default applied).

        A fresh list: the operator may keep or change it.
        """
        return self.frame.column(field, self.item_defaults.get(field))

    def column_view(self, field: str) -> list[Any]:
        """As :meth:`column`, without the copy where none is needed: read-only.

        It may be the request's own list of the field: the operator must not
        change it, nor keep it once ``execute`` has returned.
        """
        return self.frame.column_view(field, self.item_defaults.get(field))


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled by mypyc: still subclassable
class OperatorOutput:
    """Collects one invocation's writes; the engine validates and applies them.

    What each operator kind may use (others are a type violation):
    recall: ``set_common``, ``add_item(s)``/``add_columns``; transform: ``set_common``,
    ``set_item``/``set_column``; filter: ``remove_item(s)``; merge:
    ``set_item``/``set_column``, ``remove_item(s)``; reorder:
    ``set_item_order``; observe: nothing. ``warn`` is always allowed.
    """

    __slots__ = (
        "added_columns",
        "added_count",
        "added_rows",
        "added_source",
        "column_checked",
        "column_writes",
        "common_writes",
        "fills",
        "finite_added",
        "item_order",
        "item_writes",
        "order_checked",
        "removal",
        "warning",
    )

    def __init__(self) -> None:
        self.common_writes: dict[str, Any] | None = None
        self.item_writes: list[tuple[int, str, Any]] | None = None
        self.column_writes: list[tuple[str, list[Any]]] | None = None
        self.column_checked: list[bool] | None = None
        """Per column write, in order: its ``checked`` promise (no NaN or infinity)."""
        self.fills: list[tuple[Any, int]] | None = None
        """The value and item count of each ``fill_column`` (the answer's bound counts them)."""
        self.added_rows: list[dict[str, Any]] | None = None
        """Items added as dicts (``add_item(s)``)."""
        self.added_columns: dict[str, list[Any]] | None = None
        """Items added as columns (``add_columns``; never both this and ``added_rows``)."""
        self.added_count = 0
        """How many items were added, either way."""
        self.added_source: str | None = None
        self.finite_added = True
        self.removal: set[int] | range | list[int] | None = None
        """The removed indices (engine-internal; read :attr:`removed`): the range or a copy
        of the list of a first ``remove_items`` call, kept as given until another removal
        or a read of ``removed`` makes them a set."""
        self.item_order: list[int] | None = None
        self.order_checked = False
        """``set_item_order(checked=True)``: the order is a permutation of the items."""
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

    def set_column(self, field: str, values: list[Any], *, checked: bool = False) -> None:
        """Write ``field`` on every item at once: ``values[i]`` goes to item ``i``.

        ``len(values)`` must equal the item count. Applied after ``set_item``
        writes. The list belongs to the engine afterwards. ``checked=True``
        promises that the values hold no NaN or infinity (the engine then does
        not look at each).
        """
        if self.column_writes is None:
            self.column_writes = []
        if self.column_checked is None:
            self.column_checked = [False] * len(self.column_writes)
        self.column_writes.append((field, values))
        self.column_checked.append(checked)

    def fill_column(self, field: str, value: Any, count: int) -> None:
        """Write the one ``value`` on every item (``count``: the item count).

        The same as ``set_column(field, [value] * count)``, and the way to copy a
        value onto every item: a run with an answer bound
        (``Engine.run(max_answer_bytes=)``) counts the value's size once, times
        ``count``, before it is applied.
        """
        self.set_column(field, [value] * count, checked=not _bad_float(value))
        if self.fills is None:
            self.fills = []
        self.fills.append((value, count))

    def add_item(self, fields: dict[str, Any]) -> None:
        """Append a new item (recall). The dict belongs to the engine afterwards."""
        self.add_items((fields,))

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
        when the config was loaded); ``source``: the ``_source`` every one of
        them holds already (a recall step's items get its name there; the
        engine writes it only where this is not the step's name). ``fields``
        is accepted for older operators and not needed: the engine finds the
        items' fields as it turns them into columns.
        """
        rows = list(items)
        if self.added_columns is not None:  # keep the call order: columns first, as rows
            self.added_rows = _rows_of(self.added_columns, self.added_count)
            self.added_columns = None
        self._added(len(rows), checked, source)
        if self.added_rows is None:
            self.added_rows = rows
        else:
            self.added_rows.extend(rows)

    def add_columns(
        self,
        columns: dict[str, list[Any]],
        count: int,
        *,
        checked: bool = False,
        source: str | None = None,
    ) -> None:
        """Append ``count`` new items given as columns (recall): ``columns[f][i]`` is
        field ``f`` of the ``i``-th new item; every list is ``count`` long.

        The cheap way to add many items: the engine appends whole lists, and
        never changes the lists (an operator may pass the same ones on every
        request). ``checked`` and ``source`` as for :meth:`add_items`.
        """
        for f, col in columns.items():  # bounded: the fields
            if len(col) != count:
                raise ValueError(
                    f'add_columns: column "{f}" has {len(col)} values for {count} items'
                )
        first = self.added_count == 0
        self._added(count, checked, source)
        if self.added_rows is not None:
            self.added_rows.extend(_rows_of(columns, count))
        elif first:
            self.added_columns = dict(columns)
        else:
            self.added_rows = _rows_of(self.added_columns or {}, self.added_count - count)
            self.added_rows.extend(_rows_of(columns, count))
            self.added_columns = None

    def _added(self, count: int, checked: bool, source: str | None) -> None:
        if self.added_count == 0:
            self.finite_added = checked
            self.added_source = source
        else:
            self.finite_added = self.finite_added and checked
            if self.added_source != source:
                self.added_source = None
        self.added_count += count

    @property
    def added_items(self) -> list[dict[str, Any]] | None:
        """The added items as dicts (None when none was added)."""
        if self.added_columns is not None:
            return _rows_of(self.added_columns, self.added_count)
        return self.added_rows

    def remove_item(self, index: int) -> None:
        """Remove the item at ``index`` (indices refer to the input order)."""
        self._removed_set().add(index)

    def remove_items(self, indices: Iterable[int]) -> None:
        """Remove every item in ``indices``.

        The first call's ``range`` (or a copy of its list) is kept as it is: the
        engine drops a range without making a set of its indices. A call with no
        index counts as no call (``filter_paginate``'s first page removes nothing
        before it, then a range that the engine drops as a truncation).
        """
        if not self.removal:  # None, or nothing removed yet
            if isinstance(indices, range):
                self.removal = indices
                return
            if isinstance(indices, list):
                copied: list[int] = []
                for part in pieces(indices) if len(indices) > PIECE else (indices,):
                    copied += part  # bounded: len(indices) / PIECE pieces
                self.removal = copied
                return
        removed = self._removed_set()
        if isinstance(indices, (range, list, tuple)) and len(indices) > PIECE:
            for part in pieces(indices):  # bounded: len(indices) / PIECE pieces
                removed.update(part)
        else:
            removed.update(indices)

    @property
    def removed(self) -> set[int] | None:
        """The removed indices as a set (None when nothing was removed)."""
        return None if self.removal is None else self._removed_set()

    def _removed_set(self) -> set[int]:
        """``removal`` as a set (made one, piece by piece past ``PIECE``, if it is not)."""
        removal = self.removal
        if isinstance(removal, set):
            return removal
        removed: set[int] = set()
        if removal is not None:
            for part in pieces(removal) if len(removal) > PIECE else (removal,):
                removed.update(part)  # bounded: len(removal) / PIECE pieces
        self.removal = removed
        return removed

    def set_item_order(self, order: list[int], *, checked: bool = False) -> None:
        """Reorder: new position ``k`` holds old item ``order[k]`` (a permutation).

        ``checked=True`` promises that ``order`` is a permutation of
        ``range(len(inp))`` (e.g. ``sorted(range(n), key=...)``): the engine
        then checks only its length.
        """
        self.item_order = order
        self.order_checked = checked

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
            self.added_count > 0,
            bool(self.removal),
            self.item_order is not None,
        )


def _bad_float(v: Any) -> bool:
    """``v`` is a NaN or an infinity (not a valid JSON value)."""
    return type(v) is float and not math.isfinite(v)


def _rows_of(columns: dict[str, list[Any]], count: int) -> list[dict[str, Any]]:
    """Items given as columns, as one dict each."""
    return Frame(count, columns).rows()
