"""Publishing a snapshot and following it through a pod's cache, on every backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

import resources
from pineapple.resource.lowlevel import PickleCodec, SnapshotFormatError
from resources.lowlevel import FILE_CODEC
from server.fleet import (
    ANNOUNCEMENTS,
    PINS,
    Announcement,
    AnnouncementError,
    DigestMismatchError,
    FleetError,
    FleetStore,
    ObjectMissingError,
    RevisionConflictError,
    SnapshotCache,
    SnapshotTooLargeError,
    announced,
    publish_snapshot,
)

from ._backends import Tamper

pytestmark = pytest.mark.timeout(120)


def _table(n: int) -> resources.FileMapping:
    value = resources.FileMapping({f"k{i}": {"n": n, "i": i} for i in range(1000)})
    value.source = "table.json"
    value.nbytes = 1234
    value.stamp = (1, 2, 3, n)
    return value


def _publish(store: FleetStore, tmp_path: Path, n: int, name: str = "table") -> Announcement:
    return publish_snapshot(
        store,
        name=name,
        type_name="json_file",
        params_hash="json_file-abc",
        codec=FILE_CODEC,
        value=_table(n),
        generation=n,
        source_version=f"v{n}",
        workdir=tmp_path,
    )


def test_a_published_value_is_announced_and_a_cache_opens_it(
    store: FleetStore, tmp_path: Path
) -> None:
    announcement = _publish(store, tmp_path, 1)
    revision, got = announced(store, "table")
    assert got == announcement and revision > 0
    assert (got.generation, got.type, got.source_version) == (1, "json_file", "v1")
    assert [o.name for o in store.objects()] == [announcement.object]
    assert list(tmp_path.glob(".publish-*")) == []  # the staging folder is gone
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    value = cache.fetch(store, announcement, FILE_CODEC, max_bytes=10**7)
    assert isinstance(value, resources.FileMapping) and value == _table(1)
    assert (value.source, value.nbytes, value.stamp) == ("table.json", 1234, (1, 2, 3, 1))
    assert cache.latest("table") == announcement


def test_old_generations_leave_the_store_but_a_pinned_one_stays(
    store: FleetStore, tmp_path: Path
) -> None:
    published = [_publish(store, tmp_path, n) for n in (1, 2)]
    store.put(PINS, "table", orjson.dumps({"generation": 1, "reason": "", "by": "t", "time": 0}))
    published += [_publish(store, tmp_path, n) for n in (3, 4)]
    kept = sorted(o.name for o in store.objects())
    assert kept == sorted(published[i].object for i in (0, 2, 3))  # keep_generations=2, + pin
    store.delete(PINS, "table")
    _publish(store, tmp_path, 5)
    assert len(store.objects()) == 2


def test_a_generation_is_announced_once(store: FleetStore, tmp_path: Path) -> None:
    _publish(store, tmp_path, 3)
    with pytest.raises(RevisionConflictError, match="generation 3 is not above the announced 3"):
        _publish(store, tmp_path, 3)
    assert len(store.objects()) == 1


def test_a_pickling_codec_and_an_oversized_snapshot_are_refused(
    store: FleetStore, tmp_path: Path
) -> None:
    with pytest.raises(FleetError, match="type json_file: its codec pickles"):
        publish_snapshot(
            store,
            name="t",
            type_name="json_file",
            params_hash="h",
            codec=PickleCodec(),
            value={},
            generation=1,
            source_version=None,
            workdir=tmp_path,
        )
    small = dataclasses.replace(store.limits, max_snapshot_bytes=1000)
    store.limits = small
    with pytest.raises(SnapshotTooLargeError, match=r"snapshot.*--fleet-max-snapshot-bytes"):
        _publish(store, tmp_path, 1)
    assert store.objects() == [] and store.get(ANNOUNCEMENTS, "table") is None


def test_the_cache_keeps_at_most_keep_generations_and_opens_without_the_store(
    store: FleetStore, tmp_path: Path
) -> None:
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    announcements = []
    for n in (1, 2, 3):  # a pod follows each generation as it is announced
        announcements.append(_publish(store, tmp_path, n))
        cache.fetch(store, announcements[-1], FILE_CODEC, max_bytes=10**7)
    folder = next((tmp_path / "cache" / "resources").iterdir())
    assert sorted(int(p.name) for p in folder.iterdir()) == [2, 3]
    # A rollback to 2 is the newest accepted; a fetch of a cached one downloads nothing.
    store.delete_object(announcements[1].object)  # not needed: it is cached
    assert cache.fetch(store, announcements[1], FILE_CODEC, max_bytes=10**7) == _table(2)
    assert cache.latest("table") == announcements[1]
    store.close()
    reopened = SnapshotCache(tmp_path / "cache", keep=2)  # a restarted pod
    latest = reopened.latest("table")
    assert latest == announcements[1]
    assert reopened.open(latest, FILE_CODEC) == _table(2)
    with pytest.raises(ObjectMissingError, match="generation 1 is not in the fleet cache"):
        reopened.open(announcements[0], FILE_CODEC)


def test_an_announcement_naming_a_missing_object_is_refused(
    store: FleetStore, tmp_path: Path
) -> None:
    announcement = _publish(store, tmp_path, 1)
    store.delete_object(announcement.object)
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    with pytest.raises(ObjectMissingError, match=announcement.object):
        cache.fetch(store, announcement, FILE_CODEC, max_bytes=10**7)
    assert cache.latest("table") is None
    assert list((tmp_path / "cache" / "downloads").iterdir()) == []


def test_an_announcement_that_disagrees_with_its_object_is_refused(
    store: FleetStore, tmp_path: Path
) -> None:
    announcement = _publish(store, tmp_path, 1)
    lying = dataclasses.replace(announcement, digest="sha256=" + "0" * 64)
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    with pytest.raises(DigestMismatchError, match="announced"):
        cache.fetch(store, lying, FILE_CODEC, max_bytes=10**7)
    assert cache.latest("table") is None


def test_a_corrupted_snapshot_never_reaches_the_cache(
    store: FleetStore, tmp_path: Path, tamper: Tamper
) -> None:
    announcement = _publish(store, tmp_path, 1)
    tamper(announcement.object, "flip")
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    with pytest.raises(DigestMismatchError):
        cache.fetch(store, announcement, FILE_CODEC, max_bytes=10**7)
    assert cache.latest("table") is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"generation": 0}, "generation"),
        ({"generation": True}, "generation"),
        ({"size": "1"}, "size"),
        ({"digest": "md5=abc"}, "digest"),
        ({"name": ""}, "name"),
        ({"time": None}, "time"),
        ({"object": None}, "object"),
    ],
)
def test_a_malformed_announcement_names_its_field(change: dict[str, object], field: str) -> None:
    good = Announcement("t", "json_file", "h", 1, "o", "sha256=" + "a" * 64, 1, 0.0, None)
    assert Announcement.from_json(good.to_json()) == good
    doc = {**orjson.loads(good.to_json()), **change}
    with pytest.raises(AnnouncementError, match=f"field '{field}'"):
        Announcement.from_json(orjson.dumps(doc))
    doc = orjson.loads(good.to_json())
    del doc[field]
    with pytest.raises(AnnouncementError, match=f"field '{field}' is missing"):
        Announcement.from_json(orjson.dumps(doc))
    with pytest.raises(AnnouncementError, match="over 65536"):
        Announcement.from_json(b" " * 70_000)


def test_the_fleet_config_survives_in_the_cache(tmp_path: Path) -> None:
    cache = SnapshotCache(tmp_path / "cache", keep=1)
    assert cache.config() is None
    cache.save_config(7, b'{"resources": {}}\n')
    assert SnapshotCache(tmp_path / "cache", keep=1).config() == (7, b'{"resources": {}}\n')


class _Unopenable:
    """A codec that writes like FILE_CODEC and cannot open what it wrote."""

    def write(self, value: object, stem: Path) -> Sequence[Path]:
        return FILE_CODEC.write(value, stem)

    def open(self, stem: Path, generation: int) -> object:
        raise SnapshotFormatError(f"cannot read snapshot {stem}: written by another version")


def test_a_snapshot_the_codec_cannot_open_is_not_kept(store: FleetStore, tmp_path: Path) -> None:
    cache = SnapshotCache(tmp_path / "cache", keep=2)
    first = _publish(store, tmp_path, 1)
    cache.fetch(store, first, FILE_CODEC, max_bytes=10**7)
    second = _publish(store, tmp_path, 2)
    with pytest.raises(SnapshotFormatError, match="another version"):
        cache.fetch(store, second, _Unopenable(), max_bytes=10**7)
    assert cache.latest("table") == first
    with pytest.raises(ObjectMissingError):
        cache.open(second, FILE_CODEC)
