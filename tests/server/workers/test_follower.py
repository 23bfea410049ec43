"""A worker's follower switches to the config generation the supervisor accepted, or stops."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from server._reload_policy import ReloadOutcome
from server._snapshot import SnapshotHolder
from server.workers._liveness import BeatClock
from server.workers.supervisor._publishing import SharedStore
from server.workers.supervisor._supervisor import _Worker
from server.workers.worker._follower import ConfigFollow, Follower
from server.workers.worker._mapping import MappedStore


class FakeReloader:
    """Applies the bytes it is handed as a worker's Reloader does, and answers ``result``."""

    def __init__(self, result: str) -> None:
        self.result = result
        self.calls: list[tuple[str, bytes]] = []

    def apply(self, data: bytes, trigger: Any = "supervisor") -> ReloadOutcome:
        self.calls.append((trigger, data))
        error, step = ("boom", "engine") if self.result == "error" else (None, None)
        return ReloadOutcome(self.result, trigger, 0.0, 0.0, "h", error=error, step=step)  # type: ignore[arg-type]


def _follower(
    tmp_path: Path, result: str, served: int = 1
) -> tuple[Follower, SharedStore, MappedStore, FakeReloader]:
    store = SharedStore.create(tmp_path)
    worker = MappedStore(store.path)
    reloader = FakeReloader(result)
    reader, _writer = multiprocessing.Pipe(duplex=False)
    follower = Follower(
        worker,
        SnapshotHolder(),
        reader,
        config=ConfigFollow(reloader, worker, served=served, max_bytes=1 << 20),
    )
    return follower, store, worker, reloader


def test_a_newer_generation_is_built_once_from_the_supervisors_bytes(tmp_path: Path) -> None:
    follower, store, worker, reloader = _follower(tmp_path, "ok")  # started with generation 1
    store.publish_config(b'{"a": 1}', "h1")
    worker.read_config(1 << 20)  # what the worker started with
    follower.follow()
    assert reloader.calls == []  # nothing newer
    store.publish_config(b'{"a": 2}', "h2")
    follower.follow()
    follower.follow()
    assert reloader.calls == [("supervisor", b'{"a": 2}')]
    assert follower.generation == 2
    assert not (store.path / "config-1.json").exists()  # unlinked once replaced


def test_a_worker_that_cannot_build_an_accepted_config_keeps_serving_its_own(
    tmp_path: Path,
) -> None:
    follower, store, _worker, reloader = _follower(tmp_path, "error")
    store.publish_config(b'{"a": 1}', "h1")
    store.publish_config(b'{"a": 2}', "h2")
    follower.follow()
    follower.follow()  # a later pass (a data publish) does not build generation 2 again
    assert reloader.calls == [("supervisor", b'{"a": 2}')]
    assert follower.generation == 1  # it keeps serving the generation it has
    reloader.result = "ok"
    store.publish_config(b'{"a": 3}', "h3")
    follower.follow()  # the next accepted generation is built
    assert reloader.calls == [("supervisor", b'{"a": 2}'), ("supervisor", b'{"a": 3}')]
    assert follower.generation == 3


POLL = 5.0


def _beats() -> BeatClock:
    return BeatClock(multiprocessing.Pipe(duplex=False)[0])


def test_a_manifest_write_wakes_a_following_worker_at_once(tmp_path: Path) -> None:
    """The supervisor's notice (``_Worker.wake`` on each manifest write) ends the follower's
    wait: a new config generation is built before its first poll (5 s) would look."""
    store = SharedStore.create(tmp_path)
    worker = MappedStore(store.path)
    reloader = FakeReloader("ok")
    reader, writer = multiprocessing.Pipe(duplex=False)
    os.set_blocking(writer.fileno(), False)
    notices = _Worker(0, multiprocessing.current_process(), writer, _beats())
    writes: list[int] = []

    def changed() -> None:
        writes.append(1)
        notices.wake()

    store.on_change = changed
    store.publish_config(b'{"a": 1}', "h1")
    worker.read_config(1 << 20)
    follower = Follower(
        worker,
        SnapshotHolder(),
        reader,
        config=ConfigFollow(reloader, worker, served=1, max_bytes=1 << 20),
        poll_seconds=POLL,
    )
    started = time.monotonic()
    follower.start()  # its first look: after one poll, or a notice
    try:
        store.publish_config(b'{"a": 2}', "h2")
        deadline = started + POLL * 0.8
        while not reloader.calls:  # bounded by the deadline
            assert time.monotonic() < deadline, "the notice did not wake the follower"
            time.sleep(0.01)
        assert reloader.calls == [("supervisor", b'{"a": 2}')]
        assert len(writes) == 2  # one notice per manifest write
    finally:
        store.on_change = None
        follower.stop()


def test_a_notice_never_blocks_the_supervisor(tmp_path: Path) -> None:
    """A worker that reads no notice (stuck, gone) never blocks the supervisor's wake: a
    notice that does not fit the pipe is dropped, one to a closed pipe too."""
    reader, writer = multiprocessing.Pipe(duplex=False)
    os.set_blocking(writer.fileno(), False)
    notices = _Worker(0, multiprocessing.current_process(), writer, _beats())
    for _ in range(100_000):  # far more than a pipe holds; each returns at once
        notices.wake()
    assert reader.poll(0) and reader.recv_bytes(64) == b"m"
    notices.close()
    notices.wake()  # closed: dropped, no error
