"""A worker's follower switches to the config generation the supervisor accepted, or stops."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from server._reload_policy import ReloadOutcome
from server._snapshot import SnapshotHolder
from server.workers.supervisor._publishing import SharedStore
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
