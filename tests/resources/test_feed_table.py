from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from resources import FeedQueryError, FeedTable
from resources.lowlevel import build_feed_table

NAMES = ["id", "cat", "tags", "score", "lang"]
ROWS = [
    (1, "a", "[1, 2]", 5.0, "en"),
    (2, "b", "2,3", None, "en"),
    (3, "a", "[]", 7.0, "zh"),
    (4, "c", None, 1.0, "en"),
    (5, "a", "3", 5.0, None),
]


@pytest.fixture
def table() -> FeedTable:
    # Two chunks, as a streamed load delivers them.
    return build_feed_table(NAMES, [ROWS[:2], ROWS[2:]], "id", ["cat", "tags", "lang"])


def ids(rows: list[dict[str, Any]]) -> list[Any]:
    return [r["id"] for r in rows]


def test_shape(table: FeedTable) -> None:
    assert len(table) == 5
    assert table.columns == tuple(NAMES)
    assert table.index_columns == ("cat", "tags", "lang")
    assert table.index_sizes() == {"cat": 3, "tags": 4, "lang": 2}  # 1, 2, 3 and "3"
    assert list(table.column("score")) == [5.0, None, 7.0, 1.0, 5.0]
    assert table.nbytes() > 0


def test_exact_match_and_of_columns(table: FeedTable) -> None:
    assert ids(table.match({"cat": "a"})) == [1, 3, 5]
    assert ids(table.match({"cat": "a", "lang": "en"})) == [1]
    assert ids(table.match({"cat": "zzz"})) == []
    assert ids(table.match({})) == [1, 2, 3, 4, 5]
    assert ids(table.match(None)) == [1, 2, 3, 4, 5]


def test_list_value_matches_any(table: FeedTable) -> None:
    assert ids(table.match({"cat": ["b", "c"]})) == [2, 4]
    assert ids(table.match({"cat": []})) == []


def test_list_valued_column_is_indexed_per_element(table: FeedTable) -> None:
    # JSON array [1, 2] and comma list "2,3" hold ints; the lone "3" stays text:
    # a request value matches either spelling.
    assert sorted(table.index_keys("tags"), key=str) == [1, 2, 3, "3"]
    assert ids(table.match({"tags": 2})) == [1, 2]
    assert ids(table.match({"tags": "2"})) == [1, 2]
    assert ids(table.match({"tags": [1, "3"]})) == [1, 2, 5]
    assert ids(table.match({"tags": 3, "cat": "a"})) == [5]


def test_list_cells_are_indexed_per_element_and_nested_lists_hold_no_key() -> None:
    # PostgreSQL arrays arrive as lists: int[] per element, a 2-D array's rows are no keys
    t = build_feed_table(
        ["id", "tags"], [[(1, [10, 20, None]), (2, [[1, 2], [3, 4]]), (3, [20])]], "id", ["tags"]
    )
    assert sorted(t.index_keys("tags")) == [10, 20]
    assert ids(t.match({"tags": "20"})) == [1, 3]


def test_order_by_paging_and_columns(table: FeedTable) -> None:
    assert ids(table.match(order_by="score")) == [4, 1, 5, 3, 2]  # NULL last, ties in load order
    assert ids(table.match(order_by="score", descending=True)) == [3, 1, 5, 4, 2]
    assert ids(table.match(order_by="score", descending=True, offset=1, limit=2)) == [1, 5]
    assert ids(table.match({"lang": "en"}, order_by="score", descending=True, limit=1)) == [1]
    assert ids(table.match(offset=3)) == [4, 5]
    assert ids(table.match(limit=2)) == [1, 2]
    assert ids(table.match(descending=True, limit=2)) == [5, 4]
    assert table.match({"cat": "c"}, columns=["id", "score"]) == [{"id": 4, "score": 1.0}]


def test_unknown_or_unindexed_column_is_a_named_error(table: FeedTable) -> None:
    with pytest.raises(FeedQueryError, match="'score' is not indexed"):
        table.match({"score": 5.0})
    with pytest.raises(FeedQueryError, match="unknown column 'nope'"):
        table.match({}, order_by="nope")
    with pytest.raises(FeedQueryError, match="unknown column 'nope'"):
        table.match({"cat": "a"}, columns=["nope"])


class Tripwire(list[Any]):
    """A column that fails the test if recall reads it."""

    def __getitem__(self, key: Any) -> Any:
        raise AssertionError("recall read a column it must not scan")

    def __iter__(self) -> Iterator[Any]:
        raise AssertionError("recall scanned a column")


def test_recall_intersects_bitmaps_and_never_scans_the_table() -> None:
    built = build_feed_table(NAMES, [ROWS], "id", ["cat", "lang"])
    columns: dict[str, list[Any]] = {"id": list(built.column("id"))}
    columns.update({name: Tripwire(built.column(name)) for name in NAMES if name != "id"})
    indices = {name: built._indices[name] for name in ("cat", "lang")}
    table = FeedTable(columns, "id", indices)
    assert table.match({"cat": "a", "lang": ["en", "zh"]}, columns=["id"]) == [{"id": 1}, {"id": 3}]


def test_sort_rank_is_built_once_under_concurrency() -> None:
    rows = [(i, "x", "", float(i % 97), "en") for i in range(5000)]
    table = build_feed_table(NAMES, [rows], "id", ["cat"])
    start = threading.Event()
    results: list[list[Any]] = []
    lock = threading.Lock()

    def reader() -> None:
        start.wait(5)
        got = ids(table.match({"cat": "x"}, order_by="score", descending=True, limit=3))
        with lock:
            results.append(got)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(10)
    assert results == [[96, 193, 290]] * 8
    assert set(table.prepared_ranks()) == {("score", False), ("score", True)}  # base, descending
