"""``Pacer`` and paced table builds: same table, bounded pieces, freed piecewise."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pineapple import resource
from resources._pacing import PIECE_ROWS, Pacer
from resources.lowlevel import build_feed_table


class FakeTime:
    """A clock that only moves when told to, and a sleep that records and advances it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.extra_on_sleep = 0.0  # how long another thread "holds the interpreter" per sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds + self.extra_on_sleep


def _pacer(t: FakeTime) -> Pacer:
    return Pacer(0.002, 0.00005, 0.0005, 0.01, clock=t.clock, sleep=t.sleep)


def test_no_pause_within_a_slice() -> None:
    t = FakeTime()
    pace = _pacer(t)
    t.now += 0.0019  # the slice of _pacer() is 2 ms
    pace()
    assert t.sleeps == []


def test_uncontended_pause_is_one_probe_per_slice() -> None:
    t = FakeTime()
    pace = _pacer(t)
    t.now += 0.003
    pace()
    assert t.sleeps == [0.00005]
    t.now += 0.001
    pace()  # a new slice started after the probe
    assert t.sleeps == [0.00005]


def test_contended_pause_gives_back_twice_what_it_worked_capped() -> None:
    t = FakeTime()
    t.extra_on_sleep = 0.002  # the probe came back late: someone else ran
    pace = _pacer(t)
    t.now += 0.004
    pace()
    assert t.sleeps == [0.00005, 0.008]
    t.now += 0.5  # a long piece of work: the give-back is capped
    pace()
    assert t.sleeps[2:] == [0.00005, 0.01]


NAMES = ["id", "cat", "tags", "score"]


def _rows(n: int) -> list[tuple[Any, ...]]:
    return [
        (i, f"c{i % 7}", f"[{i % 5}, {i % 3 + 10}]" if i % 11 else None, i % 97 / 10)
        for i in range(n)
    ]


def test_paced_build_equals_unpaced_and_pauses_between_pieces() -> None:
    rows = _rows(3 * PIECE_ROWS + 17)
    chunks = [rows[i : i + 256] for i in range(0, len(rows), 256)]
    pauses = 0

    def pause() -> None:
        nonlocal pauses
        pauses += 1

    plain = build_feed_table(NAMES, chunks, "id", ["cat", "tags"], float_columns={"score"})
    paced = build_feed_table(
        NAMES, chunks, "id", ["cat", "tags"], float_columns={"score"}, pause=pause
    )
    plain.prepare_order("score")
    paced.prepare_order("score", pause)
    assert pauses >= len(chunks) + 4 * 4  # every chunk, and every piece of the later passes
    for name in NAMES:
        assert list(paced.column(name)) == list(plain.column(name))
    assert paced.index_sizes() == plain.index_sizes()
    for match in ({"cat": "c3"}, {"tags": 2}, {"tags": 11, "cat": "c1"}):
        want = plain.match(match, order_by="score", descending=True, limit=50)
        assert paced.match(match, order_by="score", descending=True, limit=50) == want


def test_close_frees_every_piece() -> None:
    rows = _rows(2 * PIECE_ROWS + 5)
    table = build_feed_table(NAMES, [rows], "id", ["cat", "tags"], float_columns={"score"})
    table.prepare_order("score")
    table.close()
    assert all(len(table.column(name)) == 0 for name in NAMES)
    assert table.index_sizes() == {"cat": 0, "tags": 0}


def test_manager_closes_a_retired_table() -> None:
    tables = [build_feed_table(NAMES, [_rows(10)], "id", ["cat"]) for _ in range(2)]
    served = iter(tables)
    rm = resource.Manager()
    rm.register("feed", lambda: next(served), interval=-1)
    rm.start()
    try:
        assert rm.refresh("feed") == "swapped"
        assert resource.lowlevel.flush_closes()
        assert len(tables[0].column("id")) == 0  # retired and freed
        with rm.get("feed") as live:  # type: ignore[union-attr]
            assert live is tables[1] and len(live.column("id")) == 10
    finally:
        rm.stop()


def test_columns_are_left_alone_by_the_garbage_collector() -> None:
    # A column that stayed a list would be walked by every full collection
    # while the table lives (5-10 ms for 200,000 values, holding the GIL).
    table = build_feed_table(NAMES, [_rows(PIECE_ROWS + 3)], "id", ["cat"], float_columns={"score"})
    gc.collect()
    assert [gc.is_tracked(table.column(name)) for name in NAMES] == [False] * len(NAMES)


def test_untrack_atomic_leaves_a_tuple_that_could_join_a_cycle_tracked() -> None:
    # Not importorskip: the extension is part of a normal install (a missing
    # build fails tests/reliability/test_untrack.py too).
    from resources import _untrack  # type: ignore[attr-defined]

    untrack = _untrack.untrack_atomic
    plain, holding = tuple(str(i) for i in range(5)), (1, [2])
    assert untrack(plain) is True and not gc.is_tracked(plain)
    assert untrack(holding) is False and gc.is_tracked(holding)
    with pytest.raises(TypeError):
        untrack([1, 2])
