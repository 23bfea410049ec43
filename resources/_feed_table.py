"""``FeedTable``: a whole item table in memory, columnar, with exact-match bitmap indices.

Rows are numbered ``0..n-1`` in load order. Each column is one tuple
(columnar: no per-row dict or tuple is kept). Tuples, not lists, because the
cyclic garbage collector untracks a tuple of plain values the first time it
sees it: a list of 200,000 values would be walked by every full collection
for as long as the table lives, 5-10 ms each time, holding the interpreter
(and twice as long during a refresh, with two tables alive). Each index
column has an ``Index`` (``_feed_index``): recall intersects its bitmaps and
never scans the table; ``order_by`` sorts row numbers by ``SortRanks``
(``_feed_ranks``). ``build_feed_table`` (``_feed_builder``) makes one.

Guarantees:
- A table is immutable once built; readers on any number of threads share it
  without locks. The bitmaps are frozen, so no reader can change them.
  ``close()`` empties it, and is called only once no reader holds it (the
  Manager's closer thread, after the last release).
- The only lazily built state is the sort ranks, which ``SortRanks`` builds
  once per (column, direction) under its own lock (see ``_feed_ranks``).
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyroaring import AbstractBitMap, BitMap, FrozenBitMap

from pineapple import PineappleError

from ._feed_index import Index, lookup_keys
from ._feed_ranks import SortRanks
from ._pacing import Pacer, Pause, no_pause
from ._value_size import values_nbytes

__all__ = ["FeedQueryError", "FeedTable"]


class FeedQueryError(PineappleError):
    """A recall names a column that the table does not have or does not index."""


class FeedTable:
    """An immutable in-memory table with bitmap indices. Build with :func:`build_feed_table`.

    >>> from resources import build_feed_table
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
        value_bytes: Mapping[str, int] | None = None,
    ) -> None:
        self._columns = dict(columns)
        self._names = tuple(self._columns)
        self._len = len(next(iter(self._columns.values()))) if self._columns else 0
        self.id_column = id_column
        self._indices = dict(indices)
        self.version = version
        self.source = source
        self.load_seconds = load_seconds
        self._ranks = SortRanks()
        self._nbytes: int | None = None
        self._value_bytes = dict(value_bytes) if value_bytes is not None else None

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
            hits = [bm for v in values for k in lookup_keys(v) if (bm := index.get(k))]
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
        rank = self._ranks.rank(order_by, descending, self)
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
        self._ranks.rank(column, descending=True, table=self, pause=pause)

    def prepared_ranks(self) -> dict[tuple[str, bool], Sequence[int]]:
        """The sort ranks built so far, by ``(column, descending)`` (do not mutate)."""
        return self._ranks.built()

    def null_ranks(self) -> dict[str, int]:
        """The rank NULL takes in each column whose ranks are built."""
        return self._ranks.null_ranks()

    def index_items(self, column: str) -> list[tuple[Any, FrozenBitMap]]:
        """``(key, rows)`` of every distinct value of the indexed ``column``."""
        return list(self._index(column).items())

    # -- size ---------------------------------------------------------------------

    def nbytes(self) -> int:
        """The memory held: every value, column and bitmap measured (see ``_value_size``).

        The values' bytes come from the build (``value_bytes``, measured while
        loading); a table built without them measures its columns here, once.
        """
        if self._nbytes is None:
            total = 0
            known = self._value_bytes or {}
            for name, values in self._columns.items():
                total += sys.getsizeof(values)
                size = known.get(name)
                total += values_nbytes(values) if size is None else size
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
