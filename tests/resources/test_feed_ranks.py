"""``SortRanks``: dense ranks, NULL last both ways, each built once however many readers race."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from resources import _feed_ranks
from resources._feed_ranks import SortRanks

COLUMNS: dict[str, Sequence[Any]] = {
    "score": (5.0, None, 7, 1.0, 5.0),
    "mixed": ("b", 2, None, "a", 10),
}


class Table:
    """The columns ranks are built from; ``reads`` counts the reads of a column."""

    def __init__(self) -> None:
        self.reads = threading.Semaphore(0)

    def column(self, name: str) -> Sequence[Any]:
        self.reads.release()
        return COLUMNS[name]


class Unreadable:
    """Columns that fail the test if read."""

    def column(self, name: str) -> Sequence[Any]:
        pytest.fail(f"column {name!r} read: a rank was built again")


def test_ranks_are_dense_with_null_last_in_both_directions() -> None:
    ranks = SortRanks()
    assert list(ranks.rank("score", False, Table())) == [1, 3, 2, 0, 1]
    assert list(ranks.rank("score", True, Table())) == [1, 3, 0, 2, 1]
    assert ranks.null_ranks() == {"score": 3}
    assert set(ranks.built()) == {("score", False), ("score", True)}


def test_numbers_rank_before_text_and_are_never_compared_with_it() -> None:
    ranks = SortRanks()
    assert list(ranks.rank("mixed", False, Table())) == [3, 0, 4, 2, 1]


def test_loaded_ranks_are_served_without_a_build() -> None:
    ranks = SortRanks()
    ranks.load({("score", True): (0, 1)}, {"score": 2})
    assert list(ranks.rank("score", True, Unreadable())) == [0, 1]
    assert ranks.null_ranks() == {"score": 2}
    ranks.clear()
    assert ranks.built() == {}


def test_each_rank_is_built_once_while_every_reader_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    readers = 8
    table = Table()  # a reader that finds no rank reads the column, then waits for the lock
    builds: list[str] = []
    real_ascending = _feed_ranks._ascending_rank

    def ascending(column: Sequence[Any], pause: Any) -> Any:
        # Hold the lock until every reader has missed the cache and waits for it.
        for _ in range(readers):
            assert table.reads.acquire(timeout=5)
        builds.append("ascending")
        return real_ascending(column, pause)

    monkeypatch.setattr(_feed_ranks, "_ascending_rank", ascending)
    ranks = SortRanks()
    results: list[list[int]] = []
    lock = threading.Lock()

    def reader() -> None:
        got = list(ranks.rank("score", True, table))
        with lock:
            results.append(got)

    threads = [threading.Thread(target=reader) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert builds == ["ascending"]
    assert results == [[1, 3, 0, 2, 1]] * readers
    assert set(ranks.built()) == {("score", False), ("score", True)}
