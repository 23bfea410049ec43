"""Targets 1 and 2: the cost of a borrow, alone and while values are swapped."""

from __future__ import annotations

import contextlib
import threading
import time

from pineapple import resource
from pineapple.resource._refvalue import IMPLEMENTATION

from ._measure import Result, interleaved_stmts

__all__ = ["contended_borrow", "mapped_borrow", "uncontended_borrow"]


class _Value:
    __slots__ = ("closed", "used_after_close")

    def __init__(self) -> None:
        self.closed = False
        self.used_after_close = 0

    def close(self) -> None:
        self.closed = True


def _manager(fetch: object) -> resource.Manager:
    rm = resource.Manager()
    rm.register("features", fetch, interval=-1)  # type: ignore[arg-type]
    rm.start()
    return rm


def uncontended_borrow() -> list[Result]:
    """`with rm.get(name) as v` against `with nullcontext(x) as v`, same run."""
    table = {"k": 1}
    rm = _manager(lambda: table)
    try:
        t = interleaved_stmts(
            {
                "borrow": "with rm.get('features') as v: pass",
                "miss": "rm.get('missing')",
                "floor": "with nullcontext(x) as v: pass",
            },
            {"rm": rm, "nullcontext": contextlib.nullcontext, "x": table},
        )
    finally:
        rm.stop()
    floor = t["floor"]
    return [
        Result(
            1,
            "borrow: `with rm.get(n) as v` / `with nullcontext(x) as v`",
            t["borrow"] / floor,
            1.5,
            f"{t['borrow'] * 1e9:.0f} ns vs {floor * 1e9:.0f} ns ({IMPLEMENTATION} borrow path)",
        ),
        Result(
            1,
            "missing name: `rm.get(n)` -> None / nullcontext floor",
            t["miss"] / floor,
            1.0,
            f"{t['miss'] * 1e9:.0f} ns",
        ),
    ]


def _reader_loop(rm: resource.Manager, stop: threading.Event, counts: list[int], i: int) -> None:
    n = 0
    get = rm.get
    while not stop.is_set():
        for _ in range(1000):
            h = get("features")
            if h is None:
                raise AssertionError("a loaded resource must always be borrowable")
            with h as v:
                if v.closed:
                    v.used_after_close += 1
        n += 1000
    counts[i] = n


def _borrows_per_second(
    readers: int, swap_every: float | None, seconds: float
) -> tuple[float, int]:
    made: list[_Value] = []

    def fetch() -> _Value:
        value = _Value()
        made.append(value)
        return value

    rm = _manager(fetch)
    stop = threading.Event()
    counts = [0] * readers
    threads = [
        threading.Thread(target=_reader_loop, args=(rm, stop, counts, i)) for i in range(readers)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        if swap_every is None:
            time.sleep(0.01)
        else:
            rm.refresh("features")
            time.sleep(swap_every)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    rm.stop()
    resource.lowlevel.flush_closes()
    misuse = sum(v.used_after_close for v in made)
    unclosed = sum(not v.closed for v in made)
    if unclosed:
        raise AssertionError(f"{unclosed} retired values were never closed")
    return sum(counts) / elapsed, misuse


def contended_borrow(seconds: float = 2.0) -> list[Result]:
    """2 readers while the value is swapped every millisecond, against 1 reader alone.

    Per-borrow cost is wall time divided by all borrows of all readers (the
    inverse of aggregate throughput): with the GIL, two readers share one
    interpreter, so this is what a request path pays.
    """
    alone, _ = _borrows_per_second(1, None, seconds)
    contended, misuse = _borrows_per_second(2, 0.001, seconds)
    ratio = alone / contended
    return [
        Result(
            2,
            "contended borrow: 2 readers + swap every 1 ms / 1 reader alone",
            ratio,
            2.0,
            f"{1e9 / contended:.0f} ns vs {1e9 / alone:.0f} ns per borrow; "
            f"use-after-close: {misuse}",
        )
    ]


def mapped_borrow() -> list[Result]:
    """Target 1 in a worker: borrowing a mapped shared table (as ``--workers`` does)."""
    import tempfile
    from pathlib import Path

    from resources.lowlevel import FEED_CODEC, build_feed_table
    from server.workers.supervisor._publishing import PublishingFetcher, SharedStore
    from server.workers.worker._mapping import MappedFetcher, MappedStore

    rows = [(i, f"c{i % 2}", float(i)) for i in range(10_000)]
    table = build_feed_table(["id", "cat", "score"], [rows], "id", ["cat"])
    with tempfile.TemporaryDirectory() as tmp:
        store = SharedStore.create(Path(tmp))
        publisher = PublishingFetcher(lambda: table, store, "feed_data-b", FEED_CODEC)
        publisher.commit(publisher())  # staged, then named in the manifest
        rm = _manager(MappedFetcher(MappedStore(store.path), "feed_data-b", FEED_CODEC))
        try:
            t = interleaved_stmts(
                {
                    "borrow": "with rm.get('features') as v: pass",
                    "floor": "with nullcontext(x) as v: pass",
                },
                {"rm": rm, "nullcontext": contextlib.nullcontext, "x": table},
            )
        finally:
            rm.stop()
            store.remove()
    floor = t["floor"]
    return [
        Result(
            1,
            "borrow in a worker: a mapped shared table / `with nullcontext(x) as v`",
            t["borrow"] / floor,
            1.5,
            f"{t['borrow'] * 1e9:.0f} ns vs {floor * 1e9:.0f} ns (MappedFeedTable, 10,000 rows)",
        )
    ]
