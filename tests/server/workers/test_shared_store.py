"""SharedStore and its fetchers inside one process: publish, map, swap, fail."""

from __future__ import annotations

import errno
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import resource
from pineapple.resource.lowlevel import SnapshotWriteError
from resources import FeedTable, MappedFeedTable
from resources._feed_data import FeedDataPrinter
from resources.lowlevel import build_feed_table
from server.workers._store_format import (
    MANIFEST_MAX_BYTES,
    RELOAD_ENTRY,
    SnapshotMissingError,
    entry_key,
)
from server.workers.supervisor._publishing import PublishingFetcher, SharedStore
from server.workers.supervisor._staging import Staging
from server.workers.worker._mapping import MappedFetcher, MappedStore, mapped_registry


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


def publishing(
    store: SharedStore,
    source: Any,
    key: str = "feed_data-k",
    codec: Any = resources.lowlevel.FEED_CODEC,
    **register: Any,
) -> resource.Manager:
    """The supervisor's started Manager with one resource, ``feed``, published at ``key``."""
    supervisor = resource.Manager()
    fetcher = PublishingFetcher(source, store, key, codec)
    supervisor.register("feed", fetcher, interval=-1, **register)
    supervisor.start()
    return supervisor


class _FullCodec:
    """The feed codec, on a directory that fills up once ``full`` is set."""

    def __init__(self) -> None:
        self.full = False

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        if self.full:
            raise SnapshotWriteError(f"cannot write snapshot {stem}: [Errno {errno.ENOSPC}] full")
        return resources.lowlevel.FEED_CODEC.write(value, stem)

    def open(self, stem: Path, generation: int) -> Any:
        return resources.lowlevel.FEED_CODEC.open(stem, generation)


def mapping_worker(store: SharedStore, key: str) -> resource.Manager:
    """A worker's started Manager with one resource, ``feed``, mapped from ``key``."""
    worker = resource.Manager()
    worker.register(
        "feed",
        MappedFetcher(MappedStore(store.path), key, resources.lowlevel.FEED_CODEC),
        interval=-1,
    )
    worker.start()
    return worker


def _titles(table: Any) -> list[str]:
    return [r["title"] for r in table.match({"cat": "c1"}, order_by="score", limit=3)]


def test_in_flight_borrow_keeps_the_old_snapshot_across_a_swap(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Source()
    publisher = publishing(store, source)
    worker = mapping_worker(store, "feed_data-k")
    try:
        old = worker.get("feed")
        assert old is not None
        with old as table:
            assert isinstance(table, MappedFeedTable) and table.generation == 1
            source.tag = "v2"
            assert publisher.refresh("feed") == "swapped"  # generation 2 published
            assert not list(store.path.glob("feed_data-k.1.*"))  # generation 1's unlinked
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
        publisher.stop()
        store.remove()


def test_full_directory_publishes_nothing_and_keeps_the_last_good(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    codec = _FullCodec()
    publisher = publishing(store, _Source(), codec=codec)
    before = store.manifest()

    codec.full = True
    with pytest.raises(resource.RefreshError, match=r"feed_data-k\.2.*full"):
        publisher.refresh("feed")
    assert store.manifest() == before
    generation, table = MappedStore(store.path).open("feed_data-k", resources.lowlevel.FEED_CODEC)
    try:
        assert generation == 1 and _titles(table) == ["v1-1", "v1-3", "v1-5"]
    finally:
        table.close()
        publisher.stop()
    store.remove()


def test_worker_registry_never_fetches_from_the_source(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    params = {"sqlite_path": str(tmp_path / "missing.db"), "table": "items"}
    config = {"resource_config": {"feed": {"type": "feed_data", "params": params}}}
    manager = resource.Manager(
        mapped_registry(resource.lowlevel.default_registry(), MappedStore(store.path))
    )
    manager.load_from_root_config(config)
    with pytest.raises(resource.StartError, match="no shared snapshot of feed_data-"):
        manager.start()
    manager.stop()
    # Keys depend on name, type and params only, so supervisor and worker agree; two
    # resources of one type with equal params are two entries (issue 33, item 5).
    key = entry_key("feed", "feed_data", params)
    assert key == entry_key("feed", "feed_data", dict(reversed(params.items())))
    assert key != entry_key("twin", "feed_data", params)
    assert key.startswith("feed_data-")
    assert isinstance(SnapshotMissingError("x"), Exception)
    store.remove()


def test_file_tables_are_published_whole(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    value = resources.FileMapping({"a": 1})
    value.source = "x.json"
    store.publish("json_file-k", resources.lowlevel.FILE_CODEC, value)
    generation, got = MappedStore(store.path).open("json_file-k", resources.lowlevel.FILE_CODEC)
    assert generation == 1 and got == {"a": 1} and got.source == "x.json"
    store.remove()
    assert not store.path.exists()


def test_each_publish_hands_freed_memory_back_and_a_failing_trim_fails_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SharedStore.create(tmp_path)
    trims: list[str] = []
    monkeypatch.setattr(
        "server.workers.supervisor._publishing.trim_heap", lambda: trims.append("trim")
    )
    publisher = publishing(store, _Source())
    try:
        assert store.generation("feed_data-k") == 1
        assert trims == ["trim"]  # after the table was written and closed

        def broken() -> None:
            raise OSError("no malloc_trim here")

        monkeypatch.setattr("server.workers.supervisor._publishing.trim_heap", broken)
        assert publisher.refresh("feed") == "swapped"  # the publish stands
        assert store.generation("feed_data-k") == 2
    finally:
        publisher.stop()
        store.remove()


class _ReleasingCodec(_FullCodec):
    """The feed codec with a ``release_memory`` hook that counts its calls (and can fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.releases = 0
        self.broken = False

    def release_memory(self) -> None:
        self.releases += 1
        if self.broken:
            raise RuntimeError("no pool here")


def test_each_publish_releases_the_codecs_pool_and_a_failing_release_fails_nothing(
    tmp_path: Path,
) -> None:
    store = SharedStore.create(tmp_path)
    codec = _ReleasingCodec()
    publisher = publishing(store, _Source(), codec=codec)
    try:
        assert store.generation("feed_data-k") == 1 and codec.releases == 1
        codec.broken = True
        assert publisher.refresh("feed") == "swapped"  # the publish stands
        assert store.generation("feed_data-k") == 2 and codec.releases == 2
    finally:
        publisher.stop()
        store.remove()


def test_the_feed_codec_releases_arrows_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow

    released: list[str] = []

    class Pool:
        def release_unused(self) -> None:
            released.append("pool")

    monkeypatch.setattr(pyarrow, "default_memory_pool", Pool)
    resources.lowlevel.FEED_CODEC.release_memory()
    assert released == ["pool"]


class _Sized(_Source):
    """``_Source`` whose row count the test sets, which can block until released, and
    which records what a config reload carried over to it."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 20
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.carried: list[Any] = []

    def __call__(self) -> FeedTable:
        self.reads += 1
        self.entered.set()
        assert self.release.wait(10)
        return _table(self.tag, self.rows)

    def carry_over(self, value: Any) -> None:
        self.carried.append(value)


def _stems(store: SharedStore) -> set[str]:
    return {p.name.split(".")[1] for p in store.path.glob("feed_data-k.*")}


def test_a_refused_value_is_never_published_and_its_files_go(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    validate = {"min_rows": 10, "max_change_ratio": 0.5}
    publisher = publishing(store, source, validate=validate)
    try:
        source.rows = 5  # fewer than min_rows, checked on the value as workers map it
        with pytest.raises(resource.ValidationRefusedError, match="by min_rows: 5 rows"):
            publisher.refresh("feed")
        source.rows = 35  # passes min_rows, but grew by 75%
        with pytest.raises(resource.ValidationRefusedError, match="by max_change_ratio"):
            publisher.refresh("feed")
        assert store.generation("feed_data-k") == 1 and _stems(store) == {"1"}
        source.rows = 25
        assert publisher.refresh("feed") == "swapped"
        assert store.generation("feed_data-k") == 4  # generations only grow
        assert _stems(store) == {"4"}
    finally:
        publisher.stop()
        store.remove()


def test_a_first_value_refused_says_nothing_keeps_serving(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    with pytest.raises(resource.StartError) as caught:
        publishing(store, source, validate={"min_rows": 100})
    assert "new value refused by min_rows: 20 rows, fewer than min_rows 100" in str(caught.value)
    assert "no value is loaded yet" in str(caught.value)
    assert "previous value keeps serving" not in str(caught.value)
    assert store.manifest() == {} and _stems(store) == set()
    store.remove()


def test_a_pin_that_lands_during_the_fetch_wins_and_nothing_is_published(
    tmp_path: Path,
) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    publisher = publishing(store, source)
    results: list[str] = []
    try:
        source.entered.clear()
        source.release.clear()
        source.tag = "v2"
        fetch = threading.Thread(target=lambda: results.append(publisher.refresh("feed")))
        fetch.start()
        assert source.entered.wait(10)  # the fetch is under way
        publisher.pin("feed")
        source.release.set()
        fetch.join(10)
        assert results == ["not_modified"]
        assert store.generation("feed_data-k") == 1 and _stems(store) == {"1"}
        with pytest.raises(resource.PinnedError):
            publisher.pin("feed")  # a second pin is refused; the first holds
    finally:
        source.release.set()
        publisher.stop()
        store.remove()


def test_rollback_publishes_the_kept_previous_value_again(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    publisher = publishing(store, source, keep_previous=True)
    worker = mapping_worker(store, "feed_data-k")
    try:
        source.tag = "v2"
        assert publisher.refresh("feed") == "swapped"
        assert worker.refresh("feed") == "swapped"
        publisher.rollback("feed")
        assert store.generation("feed_data-k") == 3  # written again, as the newest
        assert worker.refresh("feed") == "swapped"
        handle = worker.get("feed")
        assert handle is not None
        with handle as table:
            assert _titles(table) == ["v1-1", "v1-3", "v1-5"]
        assert source.reads == 2  # no source read for a rollback
    finally:
        worker.stop()
        publisher.stop()
        store.remove()


def test_the_budget_is_applied_before_anything_is_published(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    supervisor = resource.Manager(budget=resource.lowlevel.MemoryBudget(1))
    fetcher = PublishingFetcher(source, store, "feed_data-k", resources.lowlevel.FEED_CODEC)
    supervisor.register("feed", fetcher, interval=-1, printer=FeedDataPrinter())
    with pytest.raises(resource.StartError, match="refused by memory_budget"):
        supervisor.start()
    assert store.manifest() == {} and _stems(store) == set()
    store.remove()


def test_carry_over_reaches_the_inner_fetcher(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    source = _Sized()
    fetcher = PublishingFetcher(source, store, "feed_data-k", resources.lowlevel.FEED_CODEC)
    fetcher.carry_over("served")
    assert source.carried == ["served"]
    store.remove()


def test_a_worker_serves_what_was_published_whatever_its_own_checks(tmp_path: Path) -> None:
    """The supervisor checked the value; a worker's own budget or validators never refuse it."""
    store = SharedStore.create(tmp_path)
    publisher = publishing(store, _Sized())
    worker = resource.Manager(budget=resource.lowlevel.MemoryBudget(1))
    worker.register(
        "feed",
        MappedFetcher(MappedStore(store.path), "feed_data-k", resources.lowlevel.FEED_CODEC),
        interval=-1,
        printer=FeedDataPrinter(),
        validate={"min_rows": 1000},
    )
    try:
        worker.start()  # 20 rows, over a 1-byte budget: mapped all the same
        status = worker.status_of("feed")
        assert status.ready and status.size_bytes is not None and status.size_bytes > 1
    finally:
        worker.stop()
        publisher.stop()
        store.remove()


def _mapping(n: int) -> resources.FileMapping:
    value = resources.FileMapping({"n": n})
    value.source = "x.json"
    return value


def _publish(store: SharedStore, key: str, value: Any, staging: Staging | None = None) -> None:
    """Stage ``value`` and commit it (through ``staging``), as the supervisor's fetcher does."""
    staged = store.stage(key, resources.lowlevel.FILE_CODEC, value)
    try:
        store.commit(staged, staging)
    except BaseException:
        store.discard(staged)
        raise


def test_a_candidate_configs_value_of_a_served_key_waits_until_it_is_accepted(
    tmp_path: Path,
) -> None:
    store = SharedStore.create(tmp_path)
    worker = MappedStore(store.path)
    codec = resources.lowlevel.FILE_CODEC
    _publish(store, "json_file-k", _mapping(1))
    accepted, refused = Staging(), Staging()
    for staging, n in ((accepted, 2), (refused, 3)):
        _publish(store, "json_file-k", _mapping(n), staging)
        _publish(store, "json_file-new", _mapping(n), staging)  # no one names it
        assert worker.open("json_file-k", codec)[1] == {"n": 1}  # still what serves
    # The first candidate named "new" at once; the second one's value of it waits.
    assert worker.open("json_file-new", codec)[1] == {"n": 2}
    store.refuse(refused)
    with pytest.raises(SnapshotWriteError, match="its config was refused"):
        _publish(store, "json_file-k", _mapping(4), refused)  # a straggler
    store.publish_config(b"{}", "hash", accepted)
    generation, value = worker.open("json_file-k", codec)
    assert (generation, value) == (2, {"n": 2})
    store.refuse(accepted)  # a no-op once accepted: its value stays
    _publish(store, "json_file-k", _mapping(5), accepted)  # it serves: at once
    generation, value = worker.open("json_file-k", codec)
    assert value == {"n": 5} and generation > 2  # generations only grow
    stems = {p.name.split(".")[1] for p in store.path.iterdir() if p.name.startswith("json_file-k")}
    assert stems == {str(generation)}  # the superseded and the refused values' files are gone
    store.remove()


def test_a_manifest_over_its_cap_is_never_written(tmp_path: Path) -> None:
    store = SharedStore.create(tmp_path)
    try:
        store.amend(RELOAD_ENTRY, {"result": "ok"})
        before = store.manifest()
        with pytest.raises(SnapshotWriteError, match=f"over {MANIFEST_MAX_BYTES}"):
            store.amend(RELOAD_ENTRY, {"error": "e" * MANIFEST_MAX_BYTES})
        assert store.manifest() == before  # every reader still takes it
        assert MappedStore(store.path).manifest() == before
        assert sorted(p.name for p in store.path.iterdir() if p.name.startswith(".m")) == []
    finally:
        store.remove()
