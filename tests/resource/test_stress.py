"""Race tests: readers borrow while a refresher swaps closable values."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pineapple import resource
from pineapple.resource import Manager

from ._values import Closable, CountingFetcher
from .conftest import Impl

pytestmark = pytest.mark.stress

SWAPS = 300
"""Swaps under contention; bounded in time by ``DEADLINE`` on a loaded machine."""
DEADLINE = 60.0
READERS = 4


@pytest.fixture(autouse=True)
def fast_thread_switching() -> Iterator[None]:
    # Switch threads every 50 us instead of 5 ms: many more interleavings per second.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    yield
    sys.setswitchinterval(previous)


def test_readers_never_use_a_closed_value_and_each_retired_value_closes_once() -> None:
    fetcher = CountingFetcher()
    rm = Manager()
    rm.register("hot", fetcher, interval=-1)
    rm.start()
    stop = threading.Event()
    started = threading.Barrier(READERS + 1)
    borrows = [0] * READERS
    errors: list[BaseException] = []

    def reader(i: int) -> None:
        started.wait()
        try:
            while not stop.is_set():
                handle = rm.get("hot")
                assert handle is not None, "a loaded resource must always be borrowable"
                with handle as value:
                    value.use()
                    assert value.closes == 0
                    value.use()
                borrows[i] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for t in threads:
        t.start()
    started.wait()
    deadline = time.monotonic() + DEADLINE
    swaps = 0
    # Swap a fixed number of times (not for a fixed time), each after the readers had a
    # chance to borrow, so a slow machine runs the same test, only longer.
    while swaps < SWAPS and time.monotonic() < deadline:
        rm.refresh("hot")
        swaps += 1
        time.sleep(0.001)
    stop.set()
    for t in threads:
        t.join()
    rm.stop()
    resource.lowlevel.flush_closes()

    assert errors == []
    assert swaps == SWAPS, f"only {swaps} swaps within {DEADLINE} s"
    assert min(borrows) > 0
    made = fetcher.made
    assert len(made) == swaps + 1
    assert sum(v.used_after_close for v in made) == 0
    assert [v.closes for v in made] == [1] * len(made)


def test_acquire_never_resurrects_a_value_racing_its_last_release(impl: Impl) -> None:
    # Both sides of the race, each forced: an acquire while the last borrow is held
    # succeeds and delays the close; an acquire after the last release is refused,
    # and the value is closed exactly once either way (never reopened).
    for late in (False, True) * 100:
        value = Closable()
        ref = impl.RefValue(value, "t/race")
        handle = ref.borrow()
        assert handle is not None
        ref.release()  # baseline gone: the handle holds the last reference
        go, acquired = threading.Event(), threading.Event()
        results: list[bool] = []

        def acquirer(
            r: Any = ref,
            ev: threading.Event = go,
            out: list[bool] = results,
            done: threading.Event = acquired,
        ) -> None:
            ev.wait()
            out.append(r.acquire())
            done.set()

        t = threading.Thread(target=acquirer)
        t.start()
        if late:
            handle.release()  # the count reaches 0 before the acquire runs
            resource.lowlevel.flush_closes()
            assert value.closes == 1
        go.set()
        assert acquired.wait(10)
        if not late:
            assert results == [True]
            handle.release()
            resource.lowlevel.flush_closes()
            assert value.closes == 0, "closed while an acquired borrow was still held"
            ref.release()
        t.join()
        resource.lowlevel.flush_closes()
        assert results == [not late]
        assert value.closes == 1
        assert ref.refs == 0
