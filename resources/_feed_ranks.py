"""``SortRanks``: the per-column sort ranks a table orders rows by, built once and shared.

A rank array gives each row the dense rank of its column's value (equal
values share a rank; numbers come before text and are never compared with
it; NULL ranks last in both directions), so ordering rows is sorting row
numbers by ``rank[row]``. The descending ranks are derived from the
ascending ones.

Guarantees:
- The ranks are the only lazily built state of a table (unless
  ``FeedTable.prepare_order`` built them at load). Each is built at most once
  per (column, direction), under ``_lock``, and published whole into
  ``_ranks``: a reader, who looks without the lock, sees either no entry or
  the finished array.
- Building walks the column in ``pieces`` and calls the given ``pause``
  between them, as the load does.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ._pacing import Pause, no_pause, pieces

__all__ = ["Columns", "SortRanks"]


class Columns(Protocol):
    """What ranks are built from: a table's columns by name."""

    def column(self, name: str) -> Sequence[Any]:
        """The values of one column, by row number."""
        ...


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
    for _, piece in pieces(values, pause):
        distinct.update(piece)
    distinct.discard(None)
    if set(map(type, distinct)) <= {int, float}:
        ordered = sorted(distinct)
    else:
        ordered = sorted(distinct, key=_sort_key)
    position = {v: i for i, v in enumerate(ordered)}
    null_rank = position[None] = len(ordered)
    rank = array("q")
    for _, piece in pieces(values, pause):
        rank.extend(map(position.__getitem__, piece))
    return rank, null_rank


def _reverse_rank(ascending: Sequence[int], null_rank: int, pause: Pause = no_pause) -> array[int]:
    """Ranks for descending order; NULL still ranks last."""
    top = null_rank - 1
    rank = array("q")
    for _, piece in pieces(ascending, pause):
        rank.extend(r if r == null_rank else top - r for r in piece)
    return rank


class SortRanks:
    """The sort ranks of one table's columns, by ``(column, descending)`` (see module docs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # array[int] when built here; a memoryview of int64 when mapped (MappedFeedTable).
        self._ranks: dict[tuple[str, bool], Sequence[int]] = {}
        self._null_ranks: dict[str, int] = {}

    def rank(
        self,
        column: str,
        descending: bool,
        table: Columns,
        pause: Pause = no_pause,
    ) -> Sequence[int]:
        """The ranks of ``column`` one way, built from ``table.column(column)`` on first use."""
        key = (column, descending)
        rank = self._ranks.get(key)
        if rank is not None:
            return rank
        values = table.column(column)
        with self._lock:
            ascending = self._ranks.get((column, False))
            if ascending is None:
                ascending, self._null_ranks[column] = _ascending_rank(values, pause)
                self._ranks[(column, False)] = ascending
            if descending and key not in self._ranks:
                self._ranks[key] = _reverse_rank(ascending, self._null_ranks[column], pause)
            return self._ranks[key]

    def built(self) -> dict[tuple[str, bool], Sequence[int]]:
        """The ranks built so far, by ``(column, descending)`` (do not mutate)."""
        with self._lock:
            return dict(self._ranks)

    def null_ranks(self) -> dict[str, int]:
        """The rank NULL takes in each column whose ranks are built."""
        with self._lock:
            return dict(self._null_ranks)

    def load(
        self, ranks: Mapping[tuple[str, bool], Sequence[int]], null_ranks: Mapping[str, int]
    ) -> None:
        """Take ranks built elsewhere (a mapped snapshot's), with the rank of NULL per column."""
        with self._lock:
            self._ranks.update(ranks)
            self._null_ranks.update(null_ranks)

    def clear(self) -> None:
        """Drop every rank (the table is closing)."""
        with self._lock:
            self._ranks.clear()
