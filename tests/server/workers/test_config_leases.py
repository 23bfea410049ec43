"""Entries a reload drops leave the store once no worker may still build from them."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

import resources
from server._config_read import ConfigFileError
from server.workers._config_leases import take_lease
from server.workers.supervisor._publishing import SharedStore
from server.workers.worker._mapping import MappedStore

from .test_shared_store import _Source, _table, mapping_worker


def _files(store: SharedStore, key: str) -> list[str]:
    return sorted(p.name for p in store.path.glob(f"{key}.*"))


def _publish(store: SharedStore, key: str) -> None:
    store.publish(key, resources.lowlevel.FEED_CODEC, _table(key))


def _reload(store: SharedStore, text: str, named: set[str]) -> int:
    """What the authority does: data first, then the config generation, then retire."""
    for key in sorted(named):
        _publish(store, key)
    generation = store.publish_config(text.encode(), text)
    store.retire(named)
    return generation


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SharedStore]:
    made = SharedStore.create(tmp_path)
    yield made
    made.remove()


def test_a_dropped_entry_goes_once_the_last_worker_read_a_newer_config(
    store: SharedStore,
) -> None:
    _reload(store, "v1", {"feed_data-a", "feed_data-b"})
    worker = MappedStore(store.path)
    assert worker.read_config(1024) == (1, b"v1")  # the worker builds generation 1
    _reload(store, "v2", {"feed_data-a"})  # b is dropped (renamed, removed)
    assert store.sweep() == []  # the worker may still build generation 1: b stays
    assert _files(store, "feed_data-b") and "feed_data-b" in store.manifest()
    assert worker.read_config(1024) == (2, b"v2")  # it moved on
    assert store.sweep() == ["feed_data-b"]
    assert _files(store, "feed_data-b") == []
    assert "feed_data-b" not in store.manifest()
    assert _files(store, "feed_data-a") != []  # still named


def test_a_worker_that_exits_releases_its_lease(store: SharedStore) -> None:
    _reload(store, "v1", {"feed_data-a", "feed_data-b"})
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_hold_lease, args=(str(store.path), writer))
    child.start()
    try:
        assert reader.poll(30) and reader.recv() == 1  # the child holds generation 1
        _reload(store, "v2", {"feed_data-a"})
        assert store.sweep() == []
    finally:
        child.kill()
        child.join(30)
    assert store.sweep() == ["feed_data-b"]  # the kernel dropped the dead child's lock


def _hold_lease(path: str, writer: Connection) -> None:
    worker = MappedStore(path)
    generation, _ = worker.read_config(1024)
    writer.send(generation)
    threading.Event().wait(60)  # hold the lease until the test kills this process


def test_a_superseded_config_cannot_be_leased(store: SharedStore) -> None:
    _reload(store, "v1", set())
    path = store.path / "config-1.json"
    fd = os.open(path, os.O_RDONLY)  # a worker opened it, then the supervisor moved on
    try:
        _reload(store, "v2", set())
        with pytest.raises(ConfigFileError, match="superseded"):
            take_lease(path)
    finally:
        os.close(fd)
    # A worker that read the old manifest is handed the new generation instead.
    assert MappedStore(store.path).read_config(1024) == (2, b"v2")


def test_an_entry_named_again_before_the_sweep_stays(store: SharedStore) -> None:
    _reload(store, "v1", {"feed_data-a", "feed_data-b"})
    worker = MappedStore(store.path)
    worker.read_config(1024)
    _reload(store, "v2", {"feed_data-a"})
    _reload(store, "v3", {"feed_data-a", "feed_data-b"})  # renamed back
    worker.read_config(1024)
    assert store.sweep() == []
    assert store.generation("feed_data-b") == 2


def test_what_a_failed_reload_published_goes_at_the_next_sweep(store: SharedStore) -> None:
    _reload(store, "v1", {"feed_data-a"})
    MappedStore(store.path).read_config(1024)  # a worker serves generation 1
    _publish(store, "feed_data-new")  # fetched by a reload that failed afterwards
    store.retire({"feed_data-a"})
    assert store.sweep() == ["feed_data-new"]  # no config generation ever named it


def test_a_draining_snapshot_keeps_its_value_when_its_entry_leaves(store: SharedStore) -> None:
    source = _Source()
    store.publish("feed_data-b", resources.lowlevel.FEED_CODEC, source())
    store.publish_config(b"v1", "v1")
    manager = mapping_worker(store, "feed_data-b")
    try:
        handle = manager.get("feed")
        assert handle is not None
        with handle as table:
            store.publish_config(b"v2", "v2")
            store.retire(set())
            assert store.sweep() == ["feed_data-b"]
            assert _files(store, "feed_data-b") == []
            assert manager.refresh("feed") == "not_modified"  # no warning, nothing opened
            assert len(table) == 20  # still mapped
    finally:
        manager.stop()
