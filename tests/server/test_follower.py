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
from server.workers.worker._supervisor_link import SharedConfigSource


class FakeReloader:
    """Reads the config like a worker's Reloader does, and answers ``result``."""

    def __init__(self, source: SharedConfigSource, result: str) -> None:
        self.source = source
        self.result = result
        self.calls: list[tuple[str, bool]] = []

    def reload(self, trigger: Any, *, force: bool = False) -> ReloadOutcome:
        self.calls.append((trigger, force))
        self.source.read(1 << 20)
        error = "engine: boom" if self.result == "error" else None
        return ReloadOutcome(self.result, trigger, 0.0, 0.0, "h", error=error)  # type: ignore[arg-type]


def _follower(
    tmp_path: Path, result: str
) -> tuple[Follower, SharedStore, SharedConfigSource, FakeReloader, list[str]]:
    store = SharedStore.create(tmp_path)
    worker = MappedStore(store.path)
    source = SharedConfigSource(worker)
    reloader = FakeReloader(source, result)
    faults: list[str] = []
    reader, _writer = multiprocessing.Pipe(duplex=False)
    follower = Follower(
        worker,
        SnapshotHolder(),
        reader,
        config=ConfigFollow(
            reloader,  # type: ignore[arg-type]
            source,
            on_fault=lambda: faults.append("stop"),
        ),
    )
    return follower, store, source, reloader, faults


def test_a_newer_generation_is_built_once_from_the_supervisors_bytes(tmp_path: Path) -> None:
    follower, store, source, reloader, faults = _follower(tmp_path, "ok")
    store.publish_config(b'{"a": 1}', "h1")
    source.read(1 << 20)
    source.served = 1  # what the worker started with
    follower.follow()
    assert reloader.calls == []  # nothing newer
    store.publish_config(b'{"a": 2}', "h2")
    follower.follow()
    follower.follow()
    assert reloader.calls == [("supervisor", True)]
    assert source.served == 2 and faults == []
    assert not (store.path / "config-1.json").exists()  # unlinked once replaced


def test_a_worker_that_cannot_build_an_accepted_config_stops_itself(tmp_path: Path) -> None:
    follower, store, source, _, faults = _follower(tmp_path, "error")
    store.publish_config(b'{"a": 1}', "h1")
    source.served = 1
    store.publish_config(b'{"a": 2}', "h2")
    follower.follow()
    assert faults == ["stop"]
    assert source.served == 1  # it keeps serving the old generation while it drains
