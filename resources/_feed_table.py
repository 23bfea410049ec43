"""``FeedTable``: a whole item table in memory, columnar, with exact-match bitmap indices.

Rows are numbered ``0..n-1`` in load order. Each column is one tuple
(columnar: no per-row dict or tuple is kept). Tuples, not lists, because the
cyclic garbage collector untracks a tuple of plain values the first time it
sees it: a list of 200,000 values would be walked by every full collection
for as long as the table lives, 5-10 ms each time, holding the interpreter
(and twice as long during a refresh, with two tables alive). Each index column maps every
distinct value to a ``FrozenBitMap`` of row numbers; a list-valued cell (a
JSON array text such as ``"[3, 7]"``, a comma list such as ``"3,7"``, or a
list) is indexed under each of its elements. Recall intersects bitmaps; it
never scans the table.

Guarantees:
- A table is immutable once built; readers on any number of threads share it
  without locks. The bitmaps are frozen, so no reader can change them.
  ``close()`` empties it, and is called only once no reader holds it (the
  Manager's closer thread, after the last release).
- The only lazily built state is the per-column sort rank used by
  ``order_by`` (unless ``prepare_order`` built it at load); it is built at
  most once per (column, direction), under ``_rank_lock``, and published
  whole into ``_ranks`` (a reader sees either no entry or the finished array).
- Building walks the rows in pieces of ``PIECE_ROWS`` and calls the given
  ``pause`` (a :class:`~resources._pacing.Pacer`) between pieces, so a load on
  a refresh thread never holds the interpreter for long: the only C-level
  passes over a whole column are joining its pieces into one tuple and
  freeing it (a few milliseconds each for 200,000 values).
"""

from __future__ import annotations

import heapq
import sys
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import orjson
from pyroaring import AbstractBitMap, BitMap, FrozenBitMap

from pineapple import PineappleError

from ._json_values import json_converter
from ._pacing import Pacer, Pause, no_pause
from ._untracking import untrack_atomic

__all__ = ["PIECE_ROWS", "FeedQueryError", "FeedTable", "build_feed_table"]

Index = dict[Any, FrozenBitMap]

PIECE_ROWS = 2048
"""Rows handled between two pauses of a build."""


def _pieces(values: Sequence[Any], pause: Pause) -> Iterator[tuple[int, Sequence[Any]]]:
    """``(start, values[start:start + PIECE_ROWS])`` for the whole column, pausing before each."""
    for start in range(0, len(values), PIECE_ROWS):
        pause()
        yield start, values[start : start + PIECE_ROWS]


class FeedQueryError(PineappleError):
    """A recall names a column that the table does not have or does not index."""


def _number_or_text(part: str) -> Any:
    return int(part) if part.lstrip("-").isdigit() else part


def _elements(cell: Any) -> Sequence[Any]:
    """The values a list-valued cell is indexed under (none for NULL and ``[]``)."""
    if type(cell) is str:
        text = cell.strip()
        if text[:1] == "[":
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                return (cell,)
            if isinstance(parsed, list):
                return [e for e in parsed if e is not None and not isinstance(e, list | dict)]
            return (cell,)
        if "," in text:
            # "3,7" lists ids as a JSON array [3, 7] would: integers stay integers.
            return [_number_or_text(p) for p in map(str.strip, text.split(",")) if p]
        return (cell,)
    if isinstance(cell, list | tuple):
        return [e for e in cell if e is not None]
    return () if cell is None else (cell,)


def _is_list_valued(values: Sequence[Any], pause: Pause = no_pause) -> bool:
    kinds: set[type] = set()
    for _, piece in _pieces(values, pause):
        kinds.update(map(type, piece))
    if list in kinds or tuple in kinds:
        return True
    if str not in kinds:
        return False
    # Index columns repeat values: look at each distinct text once (hashing is C-level).
    distinct: set[Any] = set()
    try:
        for _, piece in _pieces(values, pause):
            distinct.update(piece)
    except TypeError:  # an unhashable cell (dict): no list cell was seen above
        distinct = set(v for v in values if type(v) is str)
    return any(type(v) is str and ("," in v or v[:1] == "[") for v in distinct)


def _build_index(values: Sequence[Any], pause: Pause = no_pause) -> Index:
    # Row numbers as arrays, not lists: the garbage collector never walks an
    # array's items, and pyroaring builds a bitmap from one in a single C call.
    groups: defaultdict[Any, array[int]] = defaultdict(lambda: array("I"))
    if _is_list_valued(values, pause):
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        for start, piece in _pieces(values, pause):
            for row, cell in enumerate(piece, start):
                # Fast path for the common JSON-array text ("[3, 7]"); the rest via _elements.
                if type(cell) is str and cell[:1] == "[":
                    try:
                        parsed = loads(cell)
                    except decode_error:
                        parsed = None
                    if type(parsed) is list:
                        for element in parsed:
                            if element is not None and type(element) not in (list, dict):
                                groups[element].append(row)
                        continue
                for element in _elements(cell):
                    groups[element].append(row)
    else:
        for start, piece in _pieces(values, pause):
            for row, cell in enumerate(piece, start):
                groups[cell].append(row)
        groups.pop(None, None)
    # A row listed twice under one element ("3,3") is deduplicated by the bitmap.
    index: Index = {}
    for n, (key, rows) in enumerate(groups.items()):
        if not n % 1024:
            pause()
        index[key] = FrozenBitMap(rows)
    return index


def _lookup_keys(value: Any) -> tuple[Any, ...]:
    """The index keys a request value may be stored under (``3`` vs ``"3"``)."""
    if isinstance(value, bool):
        return (int(value),)
    if isinstance(value, int):
        return (value, str(value))
    if isinstance(value, float) and value.is_integer():
        return (value, str(int(value)))
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return (value, int(text))
    return (value,)


def _sort_key(value: Any) -> tuple[int, Any]:
    # Numbers before strings before anything else; never compares across kinds.
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (2, str(value))


def _ascending_rank(values: Sequence[Any], pause: Pause = no_pause) -> tuple[array[int], int]:
    """Dense rank of each value (equal values share a rank) and the rank of NULL (last)."""
    distinct: set[Any] = set()
    for _, piece in _pieces(values, pause):
        distinct.update(piece)
    distinct.discard(None)
    if set(map(type, distinct)) <= {int, float}:
        ordered = sorted(distinct)
    else:
        ordered = sorted(distinct, key=_sort_key)
    position = {v: i for i, v in enumerate(ordered)}
    null_rank = position[None] = len(ordered)
    rank = array("q")
    for _, piece in _pieces(values, pause):
        rank.extend(map(position.__getitem__, piece))
    return rank, null_rank


def _reverse_rank(ascending: Sequence[int], null_rank: int, pause: Pause = no_pause) -> array[int]:
    """Ranks for descending order; NULL still ranks last."""
    top = null_rank - 1
    rank = array("q")
    for _, piece in _pieces(ascending, pause):
        rank.extend(r if r == null_rank else top - r for r in piece)
    return rank


class FeedTable:
    """An immutable in-memory table with bitmap indices. Build with :func:`build_feed_table`.

    >>> t = build_feed_table(["id", "cat"], [[(1, "a"), (2, "b"), (3, "a")]], "id", ["cat"])
    >>> [r["id"] for r in t.match({"cat": "a"}, order_by="id", descending=True)]
    [3, 1]
    """

    def __init__(
        self,
        columns: Mapping[str, Sequence[Any]],
        id_column: str,
        indices: Mapping[str, Index],
        *,
        version: Any = None,
        source: str = "",
        load_seconds: float = 0.0,
    ) -> None:
        self._columns = dict(columns)
        self._names = tuple(self._columns)
        self._len = len(next(iter(self._columns.values()))) if self._columns else 0
        self.id_column = id_column
        self._indices = dict(indices)
        self.version = version
        self.source = source
        self.load_seconds = load_seconds
        self._rank_lock = threading.Lock()
        # array[int] when built here; a memoryview of int64 when mapped (MappedFeedTable).
        self._ranks: dict[tuple[str, bool], Sequence[int]] = {}
        self._null_ranks: dict[str, int] = {}
        self._nbytes: int | None = None

    # -- shape --------------------------------------------------------------------

    def __len__(self) -> int:
        return self._len

    @property
    def columns(self) -> tuple[str, ...]:
        """Column names in query order."""
        return self._names

    @property
    def index_columns(self) -> tuple[str, ...]:
        """The indexed columns."""
        return tuple(self._indices)

    def column(self, name: str) -> Sequence[Any]:
        """The values of one column, by row number (do not mutate)."""
        try:
            return self._columns[name]
        except KeyError:
            raise FeedQueryError(f"unknown column {name!r}") from None

    def index_keys(self, column: str) -> list[Any]:
        """The distinct indexed values of ``column``."""
        return list(self._index(column))

    def index_sizes(self) -> dict[str, int]:
        """Distinct keys per index column."""
        return {name: len(index) for name, index in self._indices.items()}

    def _index(self, column: str) -> Index:
        index = self._indices.get(column)
        if index is None:
            indexed = ", ".join(self._indices) or "none"
            raise FeedQueryError(f"column {column!r} is not indexed (indexed: {indexed})")
        return index

    # -- recall -------------------------------------------------------------------

    def ids_matching(self, match: Mapping[str, Any] | None = None) -> AbstractBitMap:
        """Row numbers matching every ``column -> value`` (a list value matches any).

        An empty ``match`` matches every row. A value not in the index matches nothing.
        """
        result: AbstractBitMap | None = None
        for column, wanted in (match or {}).items():
            index = self._index(column)
            values = wanted if isinstance(wanted, list | tuple | set | frozenset) else (wanted,)
            hits = [bm for v in values for k in _lookup_keys(v) if (bm := index.get(k))]
            rows = BitMap.union(*hits) if hits else BitMap()
            result = rows if result is None else result & rows
            if not result:
                return BitMap()
        return result if result is not None else BitMap(range(self._len))

    def match(
        self,
        match: Mapping[str, Any] | None = None,
        *,
        order_by: str | None = None,
        descending: bool = False,
        offset: int = 0,
        limit: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows matching ``match`` (AND of exact matches), ordered and paged, as dicts.

        Without ``order_by`` rows come in load order. ``columns`` picks the
        output columns (default: all). Ties keep load order.
        """
        rows = self.ids_matching(match)
        return self.rows(self.order(rows, order_by, descending, offset, limit), columns)

    def order(
        self,
        rows: AbstractBitMap,
        order_by: str | None,
        descending: bool = False,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[int]:
        """The row numbers of ``rows`` ordered by a column and paged."""
        offset = max(0, offset)
        end = None if limit is None else offset + max(0, limit)
        if order_by is None:
            if descending:
                ordered = list(reversed(rows))
                return ordered[offset:end]
            return list(rows[offset:end]) if end is not None else list(rows)[offset:]
        rank = self._rank(order_by, descending)
        if end is not None and end < len(rows) // 4:
            return heapq.nsmallest(end, rows, key=rank.__getitem__)[offset:]
        return sorted(rows, key=rank.__getitem__)[offset:end]

    def rows(
        self, row_ids: Iterable[int], columns: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """The given rows as dicts of ``columns`` (default: all)."""
        names = tuple(columns) if columns is not None else self._names
        return self.project(row_ids, [(name, name) for name in names])

    def project(
        self, row_ids: Iterable[int], fields: Sequence[tuple[str, str]]
    ) -> list[dict[str, Any]]:
        """The given rows as dicts of ``output name -> value of column``, per ``fields`` pair."""
        cols = [(name, self.column(column)) for name, column in fields]
        return [{name: col[row] for name, col in cols} for row in row_ids]

    def prepare_order(self, column: str, pause: Pause = no_pause) -> None:
        """Build the sort ranks of ``column`` now (at load) instead of on first use."""
        self._rank(column, descending=True, pause=pause)

    def prepared_ranks(self) -> dict[tuple[str, bool], Sequence[int]]:
        """The sort ranks built so far, by ``(column, descending)`` (do not mutate)."""
        with self._rank_lock:
            return dict(self._ranks)

    def null_ranks(self) -> dict[str, int]:
        """The rank NULL takes in each column whose ranks are built."""
        with self._rank_lock:
            return dict(self._null_ranks)

    def index_items(self, column: str) -> list[tuple[Any, FrozenBitMap]]:
        """``(key, rows)`` of every distinct value of the indexed ``column``."""
        return list(self._index(column).items())

    def _rank(self, column: str, descending: bool, pause: Pause = no_pause) -> Sequence[int]:
        key = (column, descending)
        rank = self._ranks.get(key)
        if rank is not None:
            return rank
        values = self.column(column)
        with self._rank_lock:
            ascending = self._ranks.get((column, False))
            if ascending is None:
                ascending, self._null_ranks[column] = _ascending_rank(values, pause)
                self._ranks[(column, False)] = ascending
            if descending and key not in self._ranks:
                self._ranks[key] = _reverse_rank(ascending, self._null_ranks[column], pause)
            return self._ranks[key]

    # -- size ---------------------------------------------------------------------

    def nbytes(self) -> int:
        """An estimate of the memory held (columns sampled, bitmaps measured)."""
        if self._nbytes is None:
            total = 0
            for values in self._columns.values():
                total += sys.getsizeof(values)
                if values:
                    step = max(1, len(values) // 1000)
                    sample = values[::step]
                    total += sum(sys.getsizeof(v) for v in sample) * len(values) // len(sample)
            for index in self._indices.values():
                total += sys.getsizeof(index)
                total += sum(sys.getsizeof(k) + sys.getsizeof(bm) for k, bm in index.items())
            self._nbytes = total
        return self._nbytes

    def close(self) -> None:
        """Free the table a part at a time, pausing between parts (it is unusable after).

        The Manager calls this on its closer thread once no reader holds the
        table. Dropping 200,000 rows at once is one C-level pass of ~20 ms that
        would hold the interpreter; freeing index keys in batches and columns
        one by one, with a :class:`Pacer` between, lets request threads run.
        """
        pause = Pacer()
        with self._rank_lock:
            self._ranks.clear()
        for index in self._indices.values():
            while index:
                for _ in range(min(len(index), 1024)):
                    index.popitem()
                pause()
        for name in self._names:
            self._columns[name] = ()  # frees one column's values: a few milliseconds at most
            pause()

    def __repr__(self) -> str:
        indices = list(self._indices)
        return f"FeedTable({self._len} rows, columns={list(self._names)}, indices={indices})"


def _joined(part: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """One column from its chunks, untracked by the garbage collector where it can be.

    Two C-level passes of about a millisecond per 100,000 values each.
    """
    column = tuple(chain.from_iterable(part))
    part.clear()
    untrack_atomic(column)
    return column


def _converted(
    column: Sequence[Any], convert: Callable[[Any], Any], pause: Pause
) -> tuple[Any, ...]:
    """``convert`` applied to every non-null value, piece by piece."""
    part: list[tuple[Any, ...]] = []
    for _, piece in _pieces(column, pause):
        if None in piece:
            done = tuple([None if v is None else convert(v) for v in piece])
        else:
            done = tuple(map(convert, piece))
        untrack_atomic(done)
        part.append(done)
    return _joined(part)


def build_feed_table(
    names: Sequence[str],
    chunks: Iterable[Sequence[Sequence[Any]]],
    id_column: str,
    index_columns: Sequence[str],
    *,
    float_columns: Iterable[str] = (),
    columnar: bool = False,
    pause: Pause = no_pause,
    **info: Any,
) -> FeedTable:
    """Build a table from row chunks (each a sequence of row tuples in ``names`` order).

    With ``columnar`` each chunk is instead a sequence of columns (one list
    of values per name, all of one length), as the loader process sends them.
    ``float_columns`` (e.g. DECIMAL columns) are converted to ``float``. The
    caller checks that ``id_column`` and ``index_columns`` are among ``names``.
    ``pause`` is called between chunks and between pieces of every later pass.
    """
    parts: list[list[tuple[Any, ...]]] = [[] for _ in names]
    for chunk in chunks:
        pause()
        if chunk:
            pieces = chunk if columnar else zip(*chunk, strict=True)
            for part, values in zip(parts, pieces, strict=True):
                piece = values if type(values) is tuple else tuple(values)
                untrack_atomic(piece)  # else every collection until the join walks it
                part.append(piece)
    by_name: dict[str, tuple[Any, ...]] = {}
    for name, part in zip(names, parts, strict=True):
        pause()
        by_name[name] = _joined(part)
    for name in float_columns:
        by_name[name] = _converted(by_name[name], float, pause)
    for name, column in by_name.items():
        convert = json_converter(column)
        if convert is not None:
            by_name[name] = _converted(column, convert, pause)
    indices = {name: _build_index(by_name[name], pause) for name in index_columns}
    return FeedTable(by_name, id_column, indices, **info)
