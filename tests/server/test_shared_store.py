"""SharedStore and its fetchers inside one process: publish, map, swap, fail."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import resource
from resources import FeedTable, MappedFeedTable, SnapshotWriteError, build_feed_table
from server._shared import (
    MappedFetcher,
    PublishingFetcher,
    SharedStore,
    SnapshotMissingError,
    entry_key,
    mapped_registry,
)
from server._staging import Staging


def _table(tag: str, n: int = 20) -> FeedTable:
    rows = [(i, f"c{i % 2}", float(i), f"{tag}-{i}") for i in range(n)]
    table = build_feed_table(["id", "cat", "score", "title"], [rows], "id", ["cat"])
    table.prepare_order("score")
    return table


class _Source:
    """A fetcher whose next table the test chooses; ``fail`` makes it raise."""

    def __init__(self) -> None:
        self.tag = "v1"
        self.reads = 0

    def __call__(self) -> FeedTable:
        self.reads += 1
        return _table(self.tag)


def mapping_worker(store: SharedStore, key: str) -> resource.Manager:
    """A worker's started Manager with one resource, ``feed``, mapped from ``key``."""
    worker = resource.Manager()
    worker.register("feed", MappedFetcher(store, key), interval=-1)
    worker.start()
    return worker


def _titles(table: Any) -> list[str]:
    return [r["title"] for r in table.match({"cat": "c1"}, order_by="score", limit=3)]


def test_in_flight_borrow_keeps_the_old_snapshot_across_a_swap(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Source()
    publisher = PublishingFetcher(source, store, "feed_data-k", "feed_data")
    publisher()
    worker = mapping_worker(store, "feed_data-k")
    try:
        old = worker.get("feed")
        assert old is not None
        with old as table:
            assert isinstance(table, MappedFeedTable) and table.generation == 1
            source.tag = "v2"
            publisher()  # generation 2 published; generation 1's files unlinked
            assert not list(store.path.glob("feed_data-k.1.*"))
            assert worker.refresh("feed") == "swapped"
            # The borrowed table still reads generation 1, from its unlinked mapping.
            assert _titles(table) == ["v1-1", "v1-3", "v1-5"]
            new = worker.get("feed")
            assert new is not None
            with new as fresh:
                assert _titles(fresh) == ["v2-1", "v2-3", "v2-5"]
        assert worker.refresh("feed") == "not_modified"
        assert source.reads == 2
    finally:
        worker.stop()
        store.remove()


def test_full_directory_publishes_nothing_and_keeps_the_last_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SharedStore.create(tmp_path)
    publisher = PublishingFetcher(_Source(), store, "feed_data-k", "feed_data")
    first = publisher()
    before = store.manifest()

    def full(type_name: str, value: Any, stem: Path) -> str:
        raise SnapshotWriteError(f"cannot write snapshot {stem}: [Errno {errno.ENOSPC}] full")

    monkeypatch.setattr(resources, "write_snapshot", full)
    with pytest.raises(SnapshotWriteError, match=r"feed_data-k\.2.*full"):
        publisher()
    assert store.manifest() == before and first.generation == 1
    generation, table = store.open("feed_data-k")
    try:
        assert generation == 1 and _titles(table) == ["v1-1", "v1-3", "v1-5"]
    finally:
        table.close()
    store.remove()


def test_worker_registry_never_fetches_from_the_source(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    params = {"sqlite_path": str(tmp_path / "missing.db"), "table": "items"}
    config = {"resource_config": {"feed": {"type": "feed_data", "params": params}}}
    manager = resource.Manager(mapped_registry(resource.default_registry(), store))
    manager.load_from_root_config(config)
    with pytest.raises(resource.StartError, match="no shared snapshot of feed_data-"):
        manager.start()
    manager.stop()
    # Keys depend on type and params only, so supervisor and worker agree.
    assert entry_key("feed_data", params) == entry_key("feed_data", dict(reversed(params.items())))
    assert isinstance(SnapshotMissingError("x"), Exception)
    store.remove()


def test_file_tables_are_published_whole(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    value = resources.FileMapping({"a": 1})
    value.source = "x.json"
    store.publish("json_file-k", "json_file", value)
    generation, got = store.open("json_file-k")
    assert generation == 1 and got == {"a": 1} and got.source == "x.json"
    store.remove()
    assert not store.path.exists()


def test_each_publish_hands_freed_memory_back_and_a_failing_trim_fails_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SharedStore.create(tmp_path)
    trims: list[str] = []
    monkeypatch.setattr("server._shared.trim_heap", lambda: trims.append("trim"))
    publisher = PublishingFetcher(_Source(), store, "feed_data-k", "feed_data")
    try:
        assert publisher().generation == 1
        assert trims == ["trim"]  # after the table was published and closed

        def broken() -> None:
            raise OSError("no malloc_trim here")

        monkeypatch.setattr("server._shared.trim_heap", broken)
        assert publisher().generation == 2  # the publish stands
        assert store.generation("feed_data-k") == 2
    finally:
        store.remove()


def _mapping(n: int) -> resources.FileMapping:
    value = resources.FileMapping({"n": n})
    value.source = "x.json"
    return value


def test_a_candidate_configs_value_of_a_served_key_waits_until_it_is_accepted(
    tmp_path: Path,
) -> None:
    store = SharedStore.create(tmp_path)
    store.publish("json_file-k", "json_file", _mapping(1))
    accepted, refused = Staging(), Staging()
    for staging, n in ((accepted, 2), (refused, 3)):
        store.publish("json_file-k", "json_file", _mapping(n), staging)
        store.publish("json_file-new", "json_file", _mapping(n), staging)  # no one names it
        assert store.open("json_file-k")[1] == {"n": 1}  # still what serves
    # The first candidate named "new" at once; the second one's value of it waits.
    assert store.open("json_file-new")[1] == {"n": 2}
    store.refuse(refused)
    with pytest.raises(SnapshotWriteError, match="its config was refused"):
        store.publish("json_file-k", "json_file", _mapping(4), refused)  # a straggler
    store.publish_config(b"{}", "hash", accepted)
    generation, value = store.open("json_file-k")
    assert (generation, value) == (2, {"n": 2})
    store.refuse(accepted)  # a no-op once accepted: its value stays
    store.publish("json_file-k", "json_file", _mapping(5), accepted)  # it serves: at once
    assert store.open("json_file-k") == (3, {"n": 5})
    stems = {p.name.split(".")[1] for p in store.path.iterdir() if p.name.startswith("json_file-k")}
    assert stems == {"3"}  # the superseded and the refused values' files are gone
    store.remove()
