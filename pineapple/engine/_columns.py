"""The request's items as columns: one list per field, a mark where an item lacks the field.

A :class:`Frame` holds ``count`` items as ``columns``: for each field, a
list of ``count`` values in item order. An item without the field holds
:data:`ABSENT` at its position (the presence mask, kept in the list), and
the field is in ``holes``; a field outside ``holes`` is on every item.
Operators never see ``ABSENT``: :meth:`Frame.column` gives None there, and
the row view (:meth:`Frame.rows`, what ``OperatorInput.items`` shows) leaves
the field out of that item's dict.

Removing and reordering items gathers no column: :meth:`Frame.keep` makes a
new selection, and each list stays in the selection it was made in
(``layout``), beside one index list per such selection that says where each
present item is in it (``selections``, updated by each keep: one gather per
selection still in use, not one per column). A column is gathered into the
present selection when it is first read (:meth:`Frame.present`), so a
column that no later operator and no output reads is never gathered.

Lists from outside (``set_column``, ``add_columns``) are kept as they are
and never changed: a column in ``shared`` is copied before the frame first
changes it in place (a ``set_item`` write, an append), so an operator may
hand over a list it keeps. Everything else the frame changes is its own.

The per-item loops are plain loops (compiled by mypyc, see
``pineapple._native``); past :data:`PIECE` items they run piece by piece
(``spans``), so that no loop holds the GIL for more than one piece. Every
loop is bounded by the item count times the field count.
"""

from __future__ import annotations

from typing import Any, Final, final

from ._pieces import PIECE, release, spans

__all__ = ["ABSENT", "Frame", "dict_rows"]


@final
class _Absent:
    """The type of :data:`ABSENT` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""The value of an item that does not have the column's field (never given to operators)."""


def _filled(value: Any, count: int) -> list[Any]:
    return [value] * count


@final
class Frame:
    """One request's items as columns (see the module docstring).

    >>> frame = Frame.of_rows([{"id": "a", "n": 1}, {"id": "b"}])
    >>> frame.count, frame.column("n"), frame.rows()
    (2, [1, None], [{'id': 'a', 'n': 1}, {'id': 'b'}])
    """

    __slots__ = ("columns", "count", "current", "holes", "layout", "selections", "shared", "view")

    def __init__(self, count: int = 0, columns: dict[str, list[Any]] | None = None) -> None:
        self.count = count
        self.columns: dict[str, list[Any]] = columns if columns is not None else {}
        """Field -> its values; insertion order is the row view's field order. A column
        whose ``layout`` is not ``current`` holds the items of an earlier selection."""
        self.holes: set[str] = set()
        """Fields that may hold ABSENT (an item without the field)."""
        self.shared: set[str] = set()
        """Fields whose list came from outside: copied before the frame changes it."""
        self.view: list[dict[str, Any]] | None = None
        """The row view, built on demand; dropped by every change to the items."""
        self.current = 0
        """The number of the items' present selection (one more after each keep)."""
        self.layout: dict[str, int] = {}
        """Field -> the selection its list is in, where that is not ``current``."""
        self.selections: dict[int, list[int]] = {}
        """Selection -> for each present item, its position in that selection's lists."""

    @staticmethod
    def of_rows(rows: list[dict[str, Any]], keep_view: bool = False) -> Frame:
        """A frame of ``rows`` (one dict per item; their values are shared, not copied).

        ``keep_view``: ``rows`` itself is the row view until the first change
        (for an ``OperatorInput`` built from rows: its ``items`` stay those dicts).
        """
        frame = Frame(0)
        frame.extend_rows(rows)
        if keep_view:
            frame.view = rows
        return frame

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"Frame({self.count} items, fields {list(self.columns)})"

    # -- reading ---------------------------------------------------------------

    def present(self, field: str) -> list[Any] | None:
        """The frame's own list of ``field`` for the present items (None: no item has it).

        A column of an earlier selection is gathered here, once. Read-only:
        the caller must not change or keep it.
        """
        col = self.columns.get(field)
        if col is None or not self.layout:
            return col
        at = self.layout.get(field, -1)
        if at < 0:
            return col
        col = self.columns[field] = _gather(col, self.selections[at])
        self.shared.discard(field)
        self._forget(field)
        return col

    def _forget(self, field: str) -> None:
        """``field``'s list is in the present selection now: take it out of ``layout``, and
        drop the index list of the selection it was in when no other list is in that one."""
        at = self.layout.pop(field, -1)
        if at >= 0 and at not in self.layout.values():
            del self.selections[at]

    def column(self, field: str, default: Any = None) -> list[Any]:
        """Every item's value of ``field`` (None where absent; ``default`` for None and
        absent when it is not None). A fresh list, the caller's to keep or change."""
        col = self.present(field)
        if col is None:
            return _filled(default, self.count)
        if default is None and field not in self.holes:
            return col.copy()
        n = len(col)
        if n <= PIECE:
            got = _present(col, default, 0, n)
        else:
            got = []
            for a, b in spans(n):  # bounded: n / PIECE pieces
                got += _present(col, default, a, b)
        return got

    def column_view(self, field: str, default: Any = None) -> list[Any]:
        """As :meth:`column`, but the frame's own list where it needs no change (every item
        has the field, no ``default``): read-only, not to be kept past the caller's turn."""
        if default is None and field not in self.holes:
            col = self.present(field)
            if col is not None:
                return col
        return self.column(field, default)

    def value(self, index: int, field: str) -> Any:
        """Item ``index``'s value of ``field`` (None when absent or out of range)."""
        col = self.present(field)
        if col is None or index < 0 or index >= self.count:
            return None
        v = col[index]
        return None if v is ABSENT else v

    def first_missing(self, field: str) -> int:
        """The index of the first item without ``field``, or -1 (every item has it)."""
        if self.count == 0:
            return -1
        if field not in self.columns:
            return 0
        if field not in self.holes:
            return -1
        col = self.present(field)
        at = _first_of(col, True) if col is not None else 0
        if at < 0:
            self.holes.discard(field)  # known now: on every item
        return at

    def first_unset(self, field: str) -> int:
        """The index of the first item where ``field`` is None or absent, or -1."""
        if self.count == 0:
            return -1
        col = self.present(field)
        if col is None:
            return 0
        return _first_of(col, False)

    def rows(self) -> list[dict[str, Any]]:
        """The items as dicts (the row view): each item's fields in column order.

        Built once per change of the items (one dict per item); treat as read-only.
        """
        view = self.view
        if view is None:
            view = self.view = self._build_rows(0, self.count)
        return view

    def _build_rows(self, start: int, end: int) -> list[dict[str, Any]]:
        self._settle()
        return dict_rows(list(self.columns.items()), start, end)

    def _settle(self) -> None:
        """Gather every column of an earlier selection (all lists are then in the present one)."""
        for f in list(self.layout):  # bounded: the fields
            self.present(f)

    def slice(self, start: int, end: int) -> Frame:
        """Items ``start`` to ``end`` as a frame of their own (lists copied)."""
        self._settle()
        part = Frame(end - start, {f: col[start:end] for f, col in self.columns.items()})
        part.holes = set(self.holes)
        return part

    # -- changing ----------------------------------------------------------------

    def set_column(self, field: str, values: list[Any]) -> None:
        """Make ``values`` (``count`` long, no ABSENT) the column of ``field``; kept, not
        changed: the frame copies it before any change in place."""
        old = self.columns.get(field)
        self.columns[field] = values
        self.holes.discard(field)
        if self.layout:
            self._forget(field)
        if old is not None and field not in self.shared and len(old) > PIECE:
            release(old)
        self.shared.add(field)
        self.view = None

    def set_value(self, index: int, field: str, value: Any) -> None:
        """Write one item's value of ``field`` (``0 <= index < count``)."""
        col = self._own(field)
        col[index] = value
        self.view = None

    def _own(self, field: str) -> list[Any]:
        """The column of ``field`` for the present items, the frame's own (copied if shared;
        made if new)."""
        col = self.present(field)
        if col is None:
            col = self.columns[field] = _filled(ABSENT, self.count)
            self.holes.add(field)
        elif field in self.shared:
            col = self.columns[field] = col.copy()
            self.shared.discard(field)
        return col

    def fill(self, field: str, start: int, value: Any) -> None:
        """Items ``start`` to the end get ``value`` in ``field``."""
        col = self._own(field)
        col[start:] = _filled(value, self.count - start)
        if start == 0:
            self.holes.discard(field)
        self.view = None

    def extend_columns(self, columns: dict[str, list[Any]], count: int) -> None:
        """Append ``count`` items given as columns (each ``count`` long, no ABSENT; kept,
        not changed). Fields the new items lack are absent on them."""
        if count == 0:
            return
        before = self.count
        mine = self.columns
        if before == 0 and not mine:
            for f, col in columns.items():  # bounded: the added fields
                mine[f] = col
                self.shared.add(f)
            self.count = count
            self.view = None
            return
        for f in list(mine):  # bounded: the frame's fields
            if f not in columns:
                self._own(f).extend(_filled(ABSENT, count))
                self.holes.add(f)
        for f, add in columns.items():  # bounded: the added fields
            if f in mine:
                self._own(f).extend(add)
            else:
                mine[f] = _filled(ABSENT, before) + add
                self.holes.add(f)
        self.count = before + count
        self.view = None

    def extend_rows(self, rows: list[dict[str, Any]]) -> None:
        """Append ``rows`` (one dict per item; the values are taken, the dicts are not)."""
        m = len(rows)
        if m == 0:
            return
        fields = _same_fields(rows)
        if fields is not None:
            self.extend_columns({f: _pick(rows, f) for f in fields}, m)
            for f in fields:  # the lists are the frame's own (made here)
                self.shared.discard(f)
            return
        seen: dict[str, None] = {}
        for a, b in spans(m) if m > PIECE else ((0, m),):
            for i in range(a, b):  # bounded: the rows times their fields
                for f in rows[i]:
                    if f not in seen:
                        seen[f] = None
        gapped = {f: _pick_gapped(rows, f) for f in seen}
        self.extend_columns(gapped, m)
        for f in gapped:
            self.shared.discard(f)
            self.holes.add(f)  # may hold ABSENT (first_missing finds out)

    def keep(self, index: list[int]) -> None:
        """The items at ``index`` (valid, distinct positions), in that order, become the frame;
        ``index`` is the frame's afterwards.

        No column is gathered here: the lists stay in the selection they are
        in, and one index list per earlier selection is (``present`` gathers
        a column when it is read).
        """
        for at, sel in self.selections.items():  # bounded: the selections still in use
            self.selections[at] = _gather(sel, index)
        now = self.current
        if len(self.layout) < len(self.columns):  # some lists are in the present selection
            self.selections[now] = index
            for f in self.columns:  # bounded: the fields
                if f not in self.layout:
                    self.layout[f] = now
        self.current = now + 1
        self.count = len(index)
        self.view = None

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` items."""
        for at, sel in self.selections.items():  # bounded: the selections still in use
            self.selections[at] = sel[:count]
        for f, col in self.columns.items():  # bounded: the fields
            if f not in self.layout:
                self.columns[f] = col[:count]
                if f not in self.shared and len(col) > PIECE:
                    release(col)
                self.shared.discard(f)
        self.count = count
        self.view = None

    def release(self) -> None:
        """Free the frame's own large lists in pieces (the frame is done with)."""
        for f, col in self.columns.items():  # bounded: the fields
            if f not in self.shared and len(col) > PIECE:
                release(col)
        for sel in self.selections.values():  # bounded: the selections still in use
            if len(sel) > PIECE:
                release(sel)


def dict_rows(cols: list[tuple[str, list[Any]]], start: int, end: int) -> list[dict[str, Any]]:
    """Items ``start`` to ``end`` of the columns ``cols`` (field, list) as one dict each, the
    fields in ``cols`` order, ABSENT values left out; piece by piece past ``PIECE`` items."""
    out: list[dict[str, Any]] = []
    for a, b in spans(end - start) if end - start > PIECE else ((0, end - start),):
        for i in range(start + a, start + b):  # bounded: the items times the fields
            row: dict[str, Any] = {}
            for f, col in cols:
                v = col[i]
                if v is not ABSENT:
                    row[f] = v
            out.append(row)
    return out


def _present(col: list[Any], default: Any, start: int, end: int) -> list[Any]:
    """``col[start:end]`` with ABSENT as None, then None as ``default`` (if not None)."""
    out: list[Any] = []
    if default is None:
        for i in range(start, end):  # bounded: end - start <= PIECE
            v = col[i]
            out.append(None if v is ABSENT else v)
    else:
        for i in range(start, end):  # bounded: end - start <= PIECE
            v = col[i]
            out.append(default if v is None or v is ABSENT else v)
    return out


def _first_of(col: list[Any], absent_only: bool) -> int:
    """The first index holding ABSENT (or None too, unless ``absent_only``), or -1."""
    n = len(col)
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for i in range(a, b):  # bounded: n values, PIECE a piece
            v = col[i]
            if v is ABSENT or (not absent_only and v is None):
                return i
    return -1


def _same_fields(rows: list[dict[str, Any]]) -> list[str] | None:
    """The fields of ``rows[0]`` when every row has exactly those, else None."""
    first = list(rows[0])
    width = len(first)
    m = len(rows)
    for a, b in spans(m) if m > PIECE else ((0, m),):
        for i in range(a, b):  # bounded: the rows
            if len(rows[i]) != width:
                return None
    for f in first:  # bounded: the first row's fields times the rows
        for a, b in spans(m) if m > PIECE else ((0, m),):
            for i in range(a, b):
                if f not in rows[i]:
                    return None
    return first


def _pick(rows: list[dict[str, Any]], field: str) -> list[Any]:
    """``row[field]`` of every row (each has it)."""
    m = len(rows)
    if m <= PIECE:
        return [row[field] for row in rows]
    out: list[Any] = []
    for a, b in spans(m):  # bounded: m / PIECE pieces
        out += [rows[i][field] for i in range(a, b)]
    return out


def _pick_gapped(rows: list[dict[str, Any]], field: str) -> list[Any]:
    """``row[field]`` of every row, ABSENT where a row lacks it."""
    m = len(rows)
    out: list[Any] = []
    for a, b in spans(m) if m > PIECE else ((0, m),):
        for i in range(a, b):  # bounded: m rows, PIECE a piece
            out.append(rows[i].get(field, ABSENT))
    return out


def _gather(col: list[Any], index: list[int]) -> list[Any]:
    """``[col[j] for j in index]``, piece by piece past PIECE."""
    m = len(index)
    if m <= PIECE:
        return [col[j] for j in index]
    out: list[Any] = []
    for a, b in spans(m):  # bounded: m / PIECE pieces
        out += [col[index[i]] for i in range(a, b)]
    return out
