"""Snapshot reference counting and the holder's swap, without HTTP."""

from __future__ import annotations

import gc
import threading
import weakref

from pineapple import resource
from server.lowlevel import ConfigInfo, Snapshot, SnapshotHolder


class _Engine:
    blocking = False

    def __init__(self) -> None:
        self.closes = 0

    def execute(self, ctx: object, request: dict[str, object]) -> dict[str, object]:
        return request

    def close(self) -> None:
        self.closes += 1


def _snapshot(serial: int = 1) -> tuple[Snapshot, _Engine, resource.Manager]:
    engine = _Engine()
    manager = resource.Manager()
    manager.register("r", lambda: {"v": serial}, interval=-1)
    manager.start()
    info = ConfigInfo("x.json", 1, None, f"{serial:064d}", 2, 0.0)
    return Snapshot(engine, manager, info, serial), engine, manager


def test_retire_without_requests_tears_down_once() -> None:
    snap, engine, manager = _snapshot()
    snap.retire()
    snap.retire()  # a second retire is a no-op
    assert snap.wait_closed(5)
    assert engine.closes == 1
    assert manager.state == "stopped"
    assert not snap.acquire()


def test_teardown_waits_for_the_last_request() -> None:
    snap, engine, manager = _snapshot()
    assert snap.acquire()
    assert snap.acquire()
    snap.retire()
    snap.release()
    assert not snap.closed and engine.closes == 0 and manager.state == "started"
    snap.release()
    assert snap.wait_closed(5)
    assert engine.closes == 1 and manager.state == "stopped"


def test_holder_swap_publishes_before_retiring() -> None:
    holder = SnapshotHolder()
    # What a request arriving while the old snapshot retires gets: the new one, never
    # the retiring one and never nothing (the swap publishes first, then retires).
    seen_at_retire: list[object] = []

    class Observed(Snapshot):
        __slots__ = ()

        def retire(self) -> None:
            got = holder.acquire()
            seen_at_retire.append(got)
            if got is not None:
                got.release()
            super().retire()

    _, engine, manager = _snapshot(1)
    first = Observed(engine, manager, ConfigInfo("x.json", 1, None, f"{1:064d}", 2, 0.0), 1)
    second, _, _ = _snapshot(2)
    holder.swap(first)
    held = holder.acquire()
    assert held is first
    assert holder.swap(second) is first
    assert seen_at_retire == [second]
    assert holder.acquire() is second  # new requests see the new snapshot at once
    assert not first.closed  # the old one still serves its request
    first.release()
    assert first.wait_closed(5)
    second.release()
    assert holder.close() is second
    assert second.wait_closed(5)
    assert holder.acquire() is None


def test_concurrent_acquire_never_gets_a_torn_down_snapshot() -> None:
    holder = SnapshotHolder()
    holder.swap(_snapshot(0)[0])
    stop = threading.Event()
    bad: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            snap = holder.acquire()
            assert snap is not None
            if snap.closed or snap.manager.state != "started":
                bad.append(repr(snap))
            snap.release()

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    retired = []
    for serial in range(1, 30):
        old = holder.swap(_snapshot(serial)[0])
        assert old is not None
        retired.append(old)
    stop.set()
    for t in threads:
        t.join()
    for old in retired:
        assert old.wait_closed(5)
        assert old.refs == 0
    assert bad == []
    last = holder.close()
    assert last is not None and last.wait_closed(5)


def test_a_retired_snapshot_is_freed() -> None:
    snap, engine, manager = _snapshot()
    engine_ref, manager_ref = weakref.ref(engine), weakref.ref(manager)
    snap.retire()
    assert snap.wait_closed(5)
    del snap, engine, manager
    gc.collect()
    assert engine_ref() is None  # nothing (no cycle) keeps a retired engine alive
    assert manager_ref() is None
