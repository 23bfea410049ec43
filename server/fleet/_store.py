"""The fleet store's interface: buckets, records, objects, limits (the backends implement it).

A fleet store holds two kinds of things:

- **objects**: snapshots (one bundle file per published generation), put once,
  read by name, verified against their size and ``sha256`` digest;
- **records**: small values under a key in a named bucket (:data:`BUCKETS`),
  each change numbered by a revision that grows per bucket, with a bounded
  history per key, a compare-and-set (:meth:`FleetStore.update`) and a watch.

Two backends implement :class:`FleetStore`: NATS JetStream (``_jetstream``:
an Object Store bucket and Key-Value buckets) and a directory on a shared
volume (``_directory``). ``server.fleet.open_store`` picks one from a URL.
Every operation has a deadline: a store that does not answer in time raises
:class:`StoreUnavailableError` naming the store's :attr:`FleetStore.url`
(never a credential) and the operation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .._config import DEFAULT_STORE_TIMEOUT, FleetSettings
from ._errors import FleetError

__all__ = [
    "ANNOUNCEMENTS",
    "BUCKETS",
    "BUCKET_HISTORY",
    "CONFIG",
    "CONFIG_KEY",
    "DEFAULT_STORE_TIMEOUT",
    "LEASES",
    "MAX_RECORD_BYTES",
    "OBJECTS",
    "PINS",
    "PODS",
    "FleetLimits",
    "FleetStore",
    "ObjectInfo",
    "Record",
    "Watch",
    "check_key",
    "check_object_name",
    "check_record",
]

ANNOUNCEMENTS = "pineapple-announcements"
"""Key: resource name -> :class:`~server.fleet.Announcement` JSON."""
PINS = "pineapple-pins"
"""Key: resource name -> ``{"generation": int, "reason": str, "by": str, "time": float}``."""
CONFIG = "pineapple-config"
"""Key :data:`CONFIG_KEY` -> the fleet's config bytes (its revision is the config revision)."""
CONFIG_KEY = "current"
"""The key of the fleet's config in :data:`CONFIG`."""
PODS = "pineapple-pods"
"""Key: pod id -> heartbeat JSON (what the pod serves)."""
LEASES = "pineapple-leases"
"""Key ``"producer"`` -> ``{"holder": str, "expires": float}``."""
BUCKETS = (ANNOUNCEMENTS, PINS, CONFIG, PODS, LEASES)
OBJECTS = "pineapple-snapshots"
"""The object bucket (NATS Object Store bucket; ``objects/`` of the directory backend)."""

BUCKET_HISTORY = {ANNOUNCEMENTS: 64, PINS: 16, CONFIG: 64, PODS: 1, LEASES: 1}
"""Revisions kept per key in each bucket (64 is JetStream's most)."""
MAX_RECORD_BYTES = 1024 * 1024
"""A record's value is at most this long (a NATS server's default ``max_payload``)."""

_KEY = re.compile(r"[-/_=.a-zA-Z0-9]{1,256}")
"""A key as JetStream's Key-Value store allows it (no leading/trailing '.')."""
_OBJECT_NAME = re.compile(r"[-/_=.a-zA-Z0-9]{1,512}")


def check_key(bucket: str, key: str) -> str:
    """``key`` if it is a valid record key of ``bucket``; else a :class:`FleetError` naming it."""
    if bucket not in BUCKET_HISTORY:
        raise FleetError(f"unknown fleet bucket {bucket!r}; the buckets are {', '.join(BUCKETS)}")
    if not _KEY.fullmatch(key) or key.startswith(".") or key.endswith("."):
        raise FleetError(
            f"bucket {bucket}: invalid key {key[:80]!r} (1-256 of letters, digits, '-/_=.')"
        )
    return key


def check_record(bucket: str, key: str, value: bytes) -> None:
    """A record's key is valid and its value at most :data:`MAX_RECORD_BYTES` long."""
    check_key(bucket, key)
    if len(value) > MAX_RECORD_BYTES:
        raise FleetError(
            f"bucket {bucket} key {key}: a value of {len(value)} bytes,"
            f" over the {MAX_RECORD_BYTES} bytes a record may hold"
        )


def check_object_name(name: str) -> str:
    """``name`` if it is a valid object name; else a :class:`FleetError` naming it."""
    if not _OBJECT_NAME.fullmatch(name) or name.startswith(".") or ".." in name:
        raise FleetError(f"invalid object name {name[:80]!r} (letters, digits, '-/_=.')")
    return name


@dataclass(frozen=True)
class Record:
    """One revision of a key in a bucket."""

    key: str
    value: bytes
    """The value (``b""`` when deleted)."""
    revision: int
    """Increasing per bucket (NATS: the stream sequence)."""
    time: float
    """Unix seconds, when stored."""
    deleted: bool = False


@dataclass(frozen=True)
class ObjectInfo:
    """An object in the store: its name, size and digest."""

    name: str
    size: int
    digest: str
    """``"sha256=<hex>"`` of the object's bytes."""


@dataclass(frozen=True)
class FleetLimits:
    """The fleet's bounds (each has a ``serve``/``publish`` flag and a row in docs/limits.md)."""

    max_snapshot_bytes: int = FleetSettings.max_snapshot_bytes
    """``--fleet-max-snapshot-bytes``: a snapshot bundle larger than this is refused."""
    download_timeout: float = FleetSettings.download_timeout
    """``--fleet-download-timeout``: seconds an object's upload or download may take."""
    keep_generations: int = FleetSettings.keep_generations
    """``--fleet-keep-generations``: generations kept per resource (store and pod cache)."""
    max_bucket_bytes: int = 32 * 1024**3
    """``--fleet-max-bucket-bytes``: bytes a bucket may hold (the object bucket above all)."""

    def __post_init__(self) -> None:
        for name in ("max_snapshot_bytes", "download_timeout", "keep_generations"):
            if not getattr(self, name) > 0:
                raise FleetError(f"fleet limit {name}: must be > 0, got {getattr(self, name)!r}")
        if self.max_bucket_bytes < self.max_snapshot_bytes:
            raise FleetError(
                f"fleet limit max_bucket_bytes ({self.max_bucket_bytes}) is below"
                f" max_snapshot_bytes ({self.max_snapshot_bytes})"
            )


class Watch(Protocol):
    """A running watch of a bucket; :meth:`stop` ends it (no callback after it returns)."""

    def stop(self) -> None:
        """End the watch and wait (bounded) for its thread."""
        ...


class FleetStore(Protocol):
    """A fleet store: objects and records; see the module's docstring.

    Thread safety: every method may be called from any thread.
    """

    url: str
    """The store's address for messages: credentials never appear in it."""
    limits: FleetLimits

    def put_object(self, name: str, source: Path) -> ObjectInfo:
        """Store ``source``'s bytes as object ``name`` (replacing one of that name)."""
        ...

    def get_object(self, name: str, dest: Path, *, max_bytes: int) -> ObjectInfo:
        """Write object ``name`` to ``dest``, verified against its size and digest.

        ``dest`` is complete or absent. Raises :class:`ObjectMissingError`,
        :class:`SnapshotTooLargeError` (over ``max_bytes``),
        :class:`DigestMismatchError` (corrupted or truncated).
        """
        ...

    def delete_object(self, name: str) -> None:
        """Remove object ``name`` (nothing when absent)."""
        ...

    def objects(self) -> list[ObjectInfo]:
        """Every object in the store."""
        ...

    def get(self, bucket: str, key: str) -> Record | None:
        """The current record of ``key`` (None: absent or deleted)."""
        ...

    def put(self, bucket: str, key: str, value: bytes) -> int:
        """Store ``value`` under ``key``; the new revision."""
        ...

    def update(self, bucket: str, key: str, value: bytes, *, revision: int) -> int:
        """Compare-and-set: store ``value`` if ``key``'s revision is ``revision``.

        ``revision=0``: only if ``key`` is absent (or deleted). Else
        :class:`RevisionConflictError`. Returns the new revision.
        """
        ...

    def delete(self, bucket: str, key: str) -> None:
        """Mark ``key`` deleted (a revision of its own in the history)."""
        ...

    def keys(self, bucket: str) -> list[str]:
        """The keys of ``bucket`` that are not deleted."""
        ...

    def history(self, bucket: str, key: str) -> list[Record]:
        """The kept revisions of ``key``, oldest first (:data:`BUCKET_HISTORY` bounds them)."""
        ...

    def watch(self, bucket: str, on_change: Callable[[Record], None]) -> Watch:
        """Call ``on_change`` with every current record, then with every change.

        The current records are read before ``watch`` returns: every change
        made after it returns is delivered.

        Called from the store's own thread, one record at a time, in revision
        order; an exception from ``on_change`` is logged and the watch goes on.
        """
        ...

    def close(self) -> None:
        """Stop every watch and release the connection."""
        ...
