"""The shared snapshot format: a FeedTable written as Arrow IPC and mapped read-only."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import resources._shared
from pineapple.engine import Engine
from pineapple.resource import Static, with_resources
from resources import FeedTable
from resources._mapped_table import (
    MappedFeedTable,
    SnapshotWriteError,
    open_mapped_table,
    write_feed_snapshot,
)
from resources.lowlevel import FEED_CODEC, build_feed_table

NAMES = ["id", "cat", "tags", "score", "title", "maybe", "mixed", "flag"]


def _rows(n: int) -> list[tuple[Any, ...]]:
    return [
        (
            i,
            f"c{i % 5}",
            f"[{i % 3}, {i % 4 + 10}]",
            (i * 37 % 101) / 7.0,
            f"title é {i}",
            None if i % 4 == 0 else i * 1.5,
            "x" if i % 3 else i,  # integers and text in one column (SQLite allows it)
            bool(i % 2),
        )
        for i in range(n)
    ]


def _table(n: int = 300) -> FeedTable:
    table = build_feed_table(NAMES, [_rows(n)], "id", ["cat", "tags"])
    table.prepare_order("score")
    return table


@pytest.fixture
def mapped(tmp_path: Path) -> Any:
    table = _table()
    write_feed_snapshot(table, tmp_path / "g1")
    m = open_mapped_table(tmp_path / "g1", generation=1)
    try:
        yield table, m
    finally:
        m.close()


def test_every_cell_comes_back_with_its_type(mapped: Any) -> None:
    table, m = mapped
    assert isinstance(m, MappedFeedTable) and isinstance(m, FeedTable)
    assert len(m) == len(table) and m.columns == table.columns
    for name in NAMES:
        want = list(table.column(name))
        assert list(m.column(name)) == want, name
        assert [type(v) for v in m.column(name)] == [type(v) for v in want], name
        assert m.column(name)[7] == want[7] and m.column(name)[-1] == want[-1]
    assert m.index_sizes() == table.index_sizes()
    assert m.id_column == "id" and m.generation == 1


@pytest.mark.parametrize(
    ("match", "order_by", "descending"),
    [
        ({"cat": "c3"}, "score", True),
        ({"cat": ["c1", "c2"], "tags": 11}, "score", False),
        ({"tags": "2"}, None, False),
        ({"cat": "c0"}, "title", True),  # ranks not prepared: built from the mapped column
        ({}, "maybe", False),
    ],
)
def test_match_answers_as_the_heap_table(
    mapped: Any, match: dict[str, Any], order_by: str | None, descending: bool
) -> None:
    table, m = mapped
    for offset, limit in ((0, 50), (10, 5), (0, None)):
        want = table.match(
            match, order_by=order_by, descending=descending, offset=offset, limit=limit
        )
        got = m.match(match, order_by=order_by, descending=descending, offset=offset, limit=limit)
        assert got == want


def test_recall_feed_data_reads_a_mapped_table(mapped: Any) -> None:
    table, m = mapped
    config = {
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "match": {"cat": "category"},
                    "order_by": "score",
                    "descending": True,
                    "$metadata": {
                        "common_input": ["category", "size"],
                        "common_output": [],
                        "item_input": [],
                        "item_output": ["id", "title"],
                    },
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": ["category", "size"],
            "item_input": [],
            "common_output": [],
            "item_output": ["id", "title"],
        },
    }
    engine = Engine(config)
    request = {"common": {"category": "c2", "size": 5}, "items": []}
    answers = [
        engine.execute(with_resources(None, Static({"feed": t})), request)["items"]
        for t in (table, m)
    ]
    assert answers[0] == answers[1] and len(answers[0]) == 5


def test_close_releases_the_mapping(tmp_path: Path) -> None:
    write_feed_snapshot(_table(50), tmp_path / "g1")
    m = open_mapped_table(tmp_path / "g1")
    view = m.column("id")
    m.close()
    m.close()  # idempotent
    assert len(view) == 0
    # The file can be unlinked and a new one written under the same name.
    for path in tmp_path.iterdir():
        path.unlink()
    write_feed_snapshot(_table(10), tmp_path / "g1")
    assert len(open_mapped_table(tmp_path / "g1")) == 10


def test_unlinked_snapshot_stays_readable_while_mapped(tmp_path: Path) -> None:
    table = _table(100)
    write_feed_snapshot(table, tmp_path / "g1")
    m = open_mapped_table(tmp_path / "g1")
    try:
        for path in tmp_path.iterdir():
            path.unlink()
        assert m.match({"cat": "c1"}, order_by="score") == table.match(
            {"cat": "c1"}, order_by="score"
        )
    finally:
        m.close()


def test_full_directory_fails_the_write_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pa.OSFile
    calls = 0

    def full(path: str, mode: Any = "r") -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the index file was written; the table file hits ENOSPC
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, mode)

    monkeypatch.setattr(pa, "OSFile", full)
    with pytest.raises(
        SnapshotWriteError, match=r"cannot write snapshot .*g1\.table\.arrow.*space"
    ):
        write_feed_snapshot(_table(20), tmp_path / "g1")
    assert list(tmp_path.iterdir()) == []


def _files(stem: Path) -> list[bytes]:
    return [stem.with_name(stem.name + s).read_bytes() for s in (".table.arrow", ".index.arrow")]


def test_a_mapped_table_is_published_again_as_a_copy_of_its_files(
    mapped: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, m = mapped

    def encode(*args: Any) -> Any:
        raise AssertionError("a mapped table was encoded again")

    monkeypatch.setattr(resources._shared, "write_feed_snapshot", encode)
    stem = m.path.with_name("g2")
    written = FEED_CODEC.write(m, stem)
    assert [p.name for p in written] == ["g2.table.arrow", "g2.index.arrow"]
    assert _files(stem) == _files(m.path.with_name("g1"))  # the same bytes, not re-encoded
    again = FEED_CODEC.open(stem, 2)
    try:
        assert again.match({"cat": "c1"}, order_by="score") == table.match(
            {"cat": "c1"}, order_by="score"
        )
    finally:
        again.close()


def test_a_mapped_table_whose_files_are_gone_is_written_anew(mapped: Any) -> None:
    table, m = mapped
    for suffix in (".table.arrow", ".index.arrow"):  # unlinked, still mapped
        m.path.with_name("g1" + suffix).unlink()
    stem = m.path.with_name("g3")
    FEED_CODEC.write(m, stem)
    again = FEED_CODEC.open(stem, 3)
    try:
        assert again.match({"tags": 10}) == table.match({"tags": 10})
    finally:
        again.close()


@pytest.mark.parametrize("order_by", ["score", "maybe", "cat"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_first_page_selected_by_arrow_is_the_heap_tables(
    tmp_path: Path, order_by: str, descending: bool
) -> None:
    """A page of a large set (offset + limit under a quarter of it) is picked over the mapped
    ranks by Arrow: the same rows in the same order as the heap table's ``heapq`` (ties in
    row order, NULL last), for many ties, NULLs, offsets and subsets."""
    table = build_feed_table(NAMES, [_rows(2000)], "id", ["cat"])
    for column in ("score", "maybe", "cat"):
        table.prepare_order(column)
    write_feed_snapshot(table, tmp_path / "big")
    m = open_mapped_table(tmp_path / "big")
    try:
        for rows in (table.ids_matching({}), table.ids_matching({"cat": "c2"})):
            for offset, limit in ((0, 1), (0, 20), (7, 13), (90, 9)):
                assert offset + limit < len(rows) // 4  # the Arrow path
                want = table.order(rows, order_by, descending, offset, limit)
                assert m.order(rows, order_by, descending, offset, limit) == want
                assert len(want) == limit
    finally:
        m.close()
