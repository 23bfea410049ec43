"""The fleet store's contract, on every backend (the ``store`` fixture's parameters)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from server.fleet import (
    ANNOUNCEMENTS,
    LEASES,
    PINS,
    PODS,
    DigestMismatchError,
    FleetError,
    FleetLimits,
    FleetStore,
    ObjectMissingError,
    Record,
    RevisionConflictError,
    SnapshotTooLargeError,
    open_store,
)

from ._backends import Tamper

pytestmark = pytest.mark.timeout(120)


def test_put_get_and_revisions_grow_per_bucket(store: FleetStore) -> None:
    assert store.get(PINS, "a") is None
    first = store.put(PINS, "a", b"one")
    second = store.put(PINS, "b", b"two")
    third = store.put(PINS, "a", b"three")
    assert first < second < third
    got = store.get(PINS, "a")
    assert got is not None and (got.key, got.value, got.revision) == ("a", b"three", third)
    assert got.time > 0 and not got.deleted
    assert store.keys(PINS) == ["a", "b"]
    store.delete(PINS, "a")
    assert store.get(PINS, "a") is None
    assert store.keys(PINS) == ["b"]


def test_update_is_a_compare_and_set(store: FleetStore) -> None:
    created = store.update(LEASES, "producer", b"x", revision=0)
    with pytest.raises(RevisionConflictError, match="producer"):
        store.update(LEASES, "producer", b"y", revision=0)
    with pytest.raises(RevisionConflictError, match="producer"):
        store.update(LEASES, "producer", b"y", revision=created + 100)
    moved = store.update(LEASES, "producer", b"y", revision=created)
    assert moved > created
    with pytest.raises(RevisionConflictError):
        store.update(LEASES, "producer", b"z", revision=created)  # stale
    store.delete(LEASES, "producer")
    assert store.update(LEASES, "producer", b"again", revision=0) > moved


def test_history_is_oldest_first_and_bounded(store: FleetStore) -> None:
    revisions = [store.put(PINS, "r", f"v{i}".encode()) for i in range(20)]
    history = store.history(PINS, "r")
    assert [r.value for r in history] == [f"v{i}".encode() for i in range(4, 20)]  # PINS keeps 16
    assert [r.revision for r in history] == revisions[4:]
    store.put(PODS, "p", b"1")
    store.put(PODS, "p", b"2")
    assert [r.value for r in store.history(PODS, "p")] == [b"2"]  # PODS keeps 1


def test_a_bad_key_or_bucket_is_named(store: FleetStore) -> None:
    with pytest.raises(FleetError, match="invalid key 'a b'"):
        store.put(PINS, "a b", b"")
    with pytest.raises(FleetError, match="unknown fleet bucket 'nope'"):
        store.put("nope", "a", b"")
    with pytest.raises(FleetError, match="over the 1048576 bytes"):
        store.put(PINS, "big", b"x" * (1024 * 1024 + 1))


def test_a_watch_sees_current_values_first_then_every_change(store: FleetStore) -> None:
    store.put(ANNOUNCEMENTS, "a", b"a1")
    store.put(ANNOUNCEMENTS, "b", b"b1")
    store.put(ANNOUNCEMENTS, "a", b"a2")
    store.put(ANNOUNCEMENTS, "gone", b"g")
    store.delete(ANNOUNCEMENTS, "gone")
    seen: list[Record] = []
    lock = threading.Lock()
    enough = threading.Event()
    expected = 2 + 4

    def on_change(record: Record) -> None:
        with lock:
            seen.append(record)
            if len(seen) >= expected:
                enough.set()

    watch = store.watch(ANNOUNCEMENTS, on_change)
    try:
        # Every change after the watch started, each delivered (several between polls).
        store.put(ANNOUNCEMENTS, "b", b"b2")
        store.put(ANNOUNCEMENTS, "b", b"b3")
        store.put(ANNOUNCEMENTS, "c", b"c1")
        store.delete(ANNOUNCEMENTS, "a")
        assert enough.wait(30), seen
    finally:
        watch.stop()
    with lock:
        got = [(r.key, r.value, r.deleted) for r in seen]
    assert sorted(got[:2]) == [("a", b"a2", False), ("b", b"b1", False)]
    changes = [("b", b"b2", False), ("b", b"b3", False), ("c", b"c1", False), ("a", b"", True)]
    assert got[2:] == changes
    assert [r.revision for r in seen[2:]] == sorted(r.revision for r in seen[2:])


def test_objects_round_trip_with_digests(store: FleetStore, tmp_path: Path) -> None:
    source = tmp_path / "source"
    payload = bytes(range(256)) * 12_000  # ~3 MB: several chunks
    source.write_bytes(payload)
    info = store.put_object("snapshots/r/1-ab", source)
    assert info.size == len(payload) and info.digest.startswith("sha256=")
    dest = tmp_path / "dest"
    assert store.get_object("snapshots/r/1-ab", dest, max_bytes=len(payload)) == info
    assert dest.read_bytes() == payload
    assert [o.name for o in store.objects()] == ["snapshots/r/1-ab"]
    with pytest.raises(SnapshotTooLargeError, match="snapshots/r/1-ab"):
        store.get_object("snapshots/r/1-ab", tmp_path / "small", max_bytes=len(payload) - 1)
    assert not (tmp_path / "small").exists()
    store.delete_object("snapshots/r/1-ab")
    assert store.objects() == []
    with pytest.raises(ObjectMissingError, match="snapshots/r/1-ab"):
        store.get_object("snapshots/r/1-ab", tmp_path / "gone", max_bytes=len(payload))
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize(("how", "why"), [("flip", "corrupted"), ("truncate", "truncated")])
def test_a_damaged_object_is_refused(
    store: FleetStore, tmp_path: Path, tamper: Tamper, how: str, why: str
) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"a" * 3_000_000)
    store.put_object("obj", source)
    tamper("obj", how)
    with pytest.raises(DigestMismatchError, match=rf"obj.*{why}"):
        store.get_object("obj", tmp_path / "dest", max_bytes=10**8)
    assert not (tmp_path / "dest").exists()
    assert list(tmp_path.glob(".dest*")) == []


def test_a_full_bucket_refuses_an_upload_and_keeps_what_it_holds(
    store_url: str, tmp_path: Path
) -> None:
    limits = FleetLimits(max_snapshot_bytes=2**20, max_bucket_bytes=2**21, keep_generations=2)
    small = open_store(store_url, timeout=5.0, limits=limits)
    try:
        source = tmp_path / "source"
        source.write_bytes(b"s" * 900_000)
        first = small.put_object("one", source)
        small.put_object("two", source)
        with pytest.raises(SnapshotTooLargeError, match="three"):
            small.put_object("three", source)
        assert [o.name for o in small.objects()] == ["one", "two"]
        assert small.get_object("one", tmp_path / "dest", max_bytes=2**20) == first
        source.write_bytes(b"s" * (2**20 + 1))
        with pytest.raises(SnapshotTooLargeError, match="over the 1048576 bytes"):
            small.put_object("big", source)
    finally:
        small.close()


def test_a_delete_is_a_revision_of_its_own(store: FleetStore) -> None:
    put = store.put(PINS, "k", b"v")
    store.delete(PINS, "k")
    store.delete(PINS, "never")
    history = store.history(PINS, "k")
    assert [(r.value, r.deleted) for r in history] == [(b"v", False), (b"", True)]
    assert history[1].revision > put
    assert [r.deleted for r in store.history(PINS, "never")] == [True]
    assert store.keys(PINS) == [] and store.get(PINS, "never") is None
