"""Announcements, and publishing a snapshot: the bundle first, then its announcement.

A producer publishes an accepted value of a shared resource as one object
(the codec's files bundled, ``_bundle``) named
``snapshots/<resource>/<generation>-<digest prefix>``, then announces it in
:data:`ANNOUNCEMENTS` under the resource's name. A pod that sees the
announcement finds the object complete (it was stored first) and verifies it
against the announced digest.

Guarantees:
- The announcement is written with a compare-and-set at the revision read
  before the upload, and only for a generation above the announced one: two
  producers racing on one resource announce one generation once; the loser's
  object is deleted and it gets :class:`RevisionConflictError`.
- Object names carry the bundle's digest, so an upload never replaces an
  object another producer announced.
- After an announcement, objects of that resource older than the newest
  ``keep_generations`` are deleted, except a pinned generation (``PINS``).
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from pineapple.resource.lowlevel import PickleCodec, SnapshotCodec

from ._bundle import write_bundle
from ._errors import AnnouncementError, FleetError, RevisionConflictError
from ._store import ANNOUNCEMENTS, PINS, FleetStore, check_key
from ._transfer import DIGEST_PREFIX, digest_of

__all__ = [
    "ANNOUNCEMENT_MAX_BYTES",
    "Announcement",
    "announced",
    "check_portable",
    "object_name",
    "prune_generations",
    "publish_snapshot",
]

_log = logging.getLogger("pineapple.fleet")

ANNOUNCEMENT_MAX_BYTES = 64 * 1024
_OBJECT_PREFIX = "snapshots"


@dataclass(frozen=True)
class Announcement:
    """A published generation of one resource (the value of ``ANNOUNCEMENTS[name]``)."""

    name: str
    """The resource's name in the config."""
    type: str
    """Its type."""
    params_hash: str
    """A hash of the resource's name, type and params (``_store_format.entry_key``): a pod
    whose config declares other params refuses the announcement."""
    generation: int
    """1, 2, ... per resource name, never reused."""
    object: str
    """The object's name in the store."""
    digest: str
    """``"sha256=<hex>"`` of the object."""
    size: int
    time: float
    source_version: str | None
    """The fetcher's version answer, if the type has one."""

    def to_json(self) -> bytes:
        """The announcement as JSON bytes."""
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: bytes) -> Announcement:
        """Parse an announcement; :class:`AnnouncementError` naming the field that is wrong."""
        if len(data) > ANNOUNCEMENT_MAX_BYTES:
            raise AnnouncementError(
                f"announcement of {len(data)} bytes, over {ANNOUNCEMENT_MAX_BYTES}"
            )
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise AnnouncementError(f"announcement is not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise AnnouncementError("announcement is not a JSON object")
        return cls(
            name=_text(doc, "name"),
            type=_text(doc, "type"),
            params_hash=_text(doc, "params_hash"),
            generation=_count(doc, "generation", least=1),
            object=_text(doc, "object"),
            digest=_digest(doc),
            size=_count(doc, "size", least=0),
            time=_seconds(doc),
            source_version=_text(doc, "source_version", optional=True),
        )


def _field(doc: dict[str, Any], field: str) -> Any:
    if field not in doc:
        raise AnnouncementError(f"announcement {_name(doc)}: field {field!r} is missing")
    return doc[field]


def _name(doc: dict[str, Any]) -> str:
    name = doc.get("name")
    return repr(name[:80]) if isinstance(name, str) else "(no name)"


def _text(doc: dict[str, Any], field: str, *, optional: bool = False) -> Any:
    value = _field(doc, field)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 1024:
        raise AnnouncementError(
            f"announcement {_name(doc)}: field {field!r} must be a non-empty string"
            f" of at most 1024 characters"
        )
    return value


def _count(doc: dict[str, Any], field: str, *, least: int) -> int:
    value = _field(doc, field)
    if type(value) is not int or value < least:
        raise AnnouncementError(
            f"announcement {_name(doc)}: field {field!r} must be an integer >= {least},"
            f" got {str(value)[:40]!r}"
        )
    return value


def _seconds(doc: dict[str, Any]) -> float:
    value = _field(doc, "time")
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise AnnouncementError(f"announcement {_name(doc)}: field 'time' must be unix seconds")
    return float(value)


def _digest(doc: dict[str, Any]) -> str:
    value = _text(doc, "digest")
    hexpart = value[len(DIGEST_PREFIX) :]
    if (
        not value.startswith(DIGEST_PREFIX)
        or len(hexpart) != 64
        or hexpart.strip("0123456789abcdef")
    ):
        raise AnnouncementError(f"announcement {_name(doc)}: field 'digest' must be sha256=<hex>")
    return str(value)


def object_name(name: str, generation: int, digest: str) -> str:
    """The object holding generation ``generation`` of resource ``name``."""
    return f"{_OBJECT_PREFIX}/{name}/{generation}-{digest[len(DIGEST_PREFIX) :][:16]}"


def check_portable(codec: SnapshotCodec, type_name: str) -> None:
    """A codec that crosses hosts writes a data format: a pickling codec is refused."""
    if isinstance(codec, PickleCodec):
        raise FleetError(
            f"type {type_name}: its codec pickles; the fleet moves data formats only"
            " (nothing downloaded is unpickled)"
        )


def announced(store: FleetStore, name: str) -> tuple[int, Announcement | None]:
    """``(revision, announcement)`` of resource ``name`` (``(0, None)`` before the first)."""
    record = store.get(ANNOUNCEMENTS, name)
    if record is None:
        return 0, None
    return record.revision, Announcement.from_json(record.value)


def publish_snapshot(
    store: FleetStore,
    *,
    name: str,
    type_name: str,
    params_hash: str,
    codec: SnapshotCodec,
    value: Any,
    generation: int,
    source_version: str | None,
    workdir: Path,
) -> Announcement:
    """Write ``value`` with ``codec``, bundle it, store it, THEN announce it.

    See the module's Guarantees. Raises :class:`SnapshotTooLargeError`
    (over ``store.limits.max_snapshot_bytes``), :class:`RevisionConflictError`
    (another producer announced meanwhile, or ``generation`` is not above
    the announced one), :class:`StoreUnavailableError`.
    """
    check_key(ANNOUNCEMENTS, name)
    check_portable(codec, type_name)
    revision, current = announced(store, name)
    if current is not None and current.generation >= generation:
        raise RevisionConflictError(
            f"resource {name}: generation {generation} is not above the announced"
            f" {current.generation} in {store.url}"
        )
    started = time.monotonic()
    stage = Path(tempfile.mkdtemp(prefix=".publish-", dir=workdir))
    try:
        stem = stage / "snapshot"
        files = codec.write(value, stem)
        bundle = stage / "bundle"
        write_bundle(files, stem, bundle, max_bytes=store.limits.max_snapshot_bytes)
        local = digest_of(bundle, name=name, max_bytes=store.limits.max_snapshot_bytes)
        bundled = time.monotonic()
        info = store.put_object(object_name(name, generation, local.digest), bundle)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    uploaded = time.monotonic()
    announcement = Announcement(
        name=name,
        type=type_name,
        params_hash=params_hash,
        generation=generation,
        object=info.name,
        digest=info.digest,
        size=info.size,
        time=time.time(),
        source_version=source_version,
    )
    try:
        store.update(ANNOUNCEMENTS, name, announcement.to_json(), revision=revision)
    except RevisionConflictError:
        store.delete_object(info.name)
        raise
    _log.info(
        "%s generation %d: written and bundled in %.3fs, uploaded in %.3fs (%d bytes),"
        " announced in %.3fs",
        name,
        generation,
        bundled - started,
        uploaded - bundled,
        info.size,
        time.monotonic() - uploaded,
    )
    prune_generations(store, name, store.limits.keep_generations)
    return announcement


def _generation_of(object_name: str, prefix: str) -> int | None:
    """The generation of an object of the resource whose objects start with ``prefix``."""
    rest = object_name[len(prefix) :] if object_name.startswith(prefix) else "/"
    head = rest.partition("-")[0]
    return int(head) if "/" not in rest and head.isdigit() else None


def prune_generations(store: FleetStore, name: str, keep: int) -> list[str]:
    """Delete objects of ``name`` older than its newest ``keep`` generations (a pinned one
    stays); the names deleted."""
    prefix = f"{_OBJECT_PREFIX}/{name}/"
    pinned: int | None = None
    pin = store.get(PINS, name)
    if pin is not None:
        try:
            pinned = int(orjson.loads(pin.value)["generation"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            pinned = None
    mine = [
        (generation, info.name)
        for info in store.objects()
        if (generation := _generation_of(info.name, prefix)) is not None
    ]
    newest = sorted({g for g, _ in mine}, reverse=True)[:keep]
    doomed = [n for g, n in mine if g not in newest and g != pinned]
    for doomed_name in doomed:
        store.delete_object(doomed_name)
    return doomed
