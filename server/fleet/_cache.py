"""``--fleet-cache DIR``: what a pod accepted from the fleet, kept across restarts.

Layout under the root::

    resources/<hex name>/<generation, 12 digits>/announcement.json
    resources/<hex name>/<generation>/accepted          a sequence number (text)
    resources/<hex name>/<generation>/snapshot<suffix>  the codec's files (unbundled)
    config                                     the fleet config: a JSON line, then the bytes
    downloads/                                 at most one download in progress

Guarantees:
- An entry appears by one ``rename`` of a finished folder (downloaded,
  digest-verified against the store's info AND the announcement, unbundled),
  so an entry in ``resources/`` is complete; a download that fails leaves
  nothing but its removed temporary folder.
- Per resource at most ``keep`` entries stay: after each fetch the least
  recently accepted others are removed (the fetched one always stays). With
  the one download in progress, a pod holds at most ``keep`` + 1
  generations of a resource on disk. A codec's mapped files that are removed
  stay readable to whoever maps them (the kernel frees them at the last unmap).
- :meth:`SnapshotCache.latest` is the most recently *accepted* generation
  (a rollback to an older generation is newer than what it replaced).
- One lock serialises this process's fetches; one process uses a cache
  directory at a time (the pod's supervisor, or its single process).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from pineapple.resource.lowlevel import SnapshotCodec

from .._atomic_file import write_atomically
from ._bundle import read_bundle
from ._errors import DigestMismatchError, FleetError, ObjectMissingError
from ._snapshots import ANNOUNCEMENT_MAX_BYTES, Announcement
from ._store import FleetStore

_log = logging.getLogger("pineapple.fleet")

__all__ = ["CONFIG_MAX_BYTES", "SnapshotCache"]

CONFIG_MAX_BYTES = 64 * 1024 * 1024
"""A cached fleet config larger than this is refused."""
_STEM = "snapshot"


class SnapshotCache:
    """The last accepted generations per resource and the last fleet config (see Guarantees)."""

    def __init__(self, root: Path, keep: int) -> None:
        if keep < 1:
            raise FleetError(f"fleet cache {root}: keep must be >= 1, got {keep}")
        self.root = Path(root)
        self.keep = keep
        self._lock = threading.Lock()
        (self.root / "resources").mkdir(parents=True, exist_ok=True)
        downloads = self.root / "downloads"
        shutil.rmtree(downloads, ignore_errors=True)  # a crashed process's partial download
        downloads.mkdir()

    def _folder(self, name: str) -> Path:
        return self.root / "resources" / name.encode().hex()

    def _entry(self, announcement: Announcement) -> Path:
        return self._folder(announcement.name) / f"{announcement.generation:012d}"

    def _cached(self, entry: Path) -> Announcement | None:
        try:
            with open(entry / "announcement.json", "rb") as src:
                return Announcement.from_json(src.read(ANNOUNCEMENT_MAX_BYTES + 1))
        except FileNotFoundError:
            return None

    def _accepted(self, entry: Path) -> int:
        try:
            return int((entry / "accepted").read_bytes() or b"0")
        except (FileNotFoundError, ValueError):
            return 0

    def _entries(self, name: str) -> list[Path]:
        folder = self._folder(name)
        try:
            return [p for p in folder.iterdir() if p.name.isdigit()]
        except FileNotFoundError:
            return []

    def fetch(
        self, store: FleetStore, announcement: Announcement, codec: SnapshotCodec, *, max_bytes: int
    ) -> Any:
        """The value ``announcement`` names: from the cache, else downloaded, verified and kept.

        Raises :class:`ObjectMissingError`, :class:`DigestMismatchError`,
        :class:`SnapshotTooLargeError`, :class:`StoreUnavailableError`, or the
        codec's ``SnapshotFormatError``; the cache is then as it was.
        """
        with self._lock:
            started = time.monotonic()
            entry = self._entry(announcement)
            cached = self._cached(entry)
            fresh = cached is None or cached.digest != announcement.digest
            stages = ""
            if fresh:
                stages = self._download(store, announcement, entry, max_bytes)
            downloaded = time.monotonic()
            try:
                value = codec.open(entry / _STEM, announcement.generation)
            except BaseException:
                if fresh:  # what the codec cannot open is not kept
                    shutil.rmtree(entry, ignore_errors=True)
                raise
            self._mark_accepted(announcement.name, entry)
            self._prune(announcement.name, entry)
            _log.info(
                "resource %s: generation %d %s in %.3fs%s (%d bytes), opened in %.3fs",
                announcement.name,
                announcement.generation,
                "downloaded, verified and unbundled" if fresh else "found in the cache",
                downloaded - started,
                stages,
                announcement.size,
                time.monotonic() - downloaded,
            )
            return value

    def _download(
        self, store: FleetStore, announcement: Announcement, entry: Path, max_bytes: int
    ) -> str:
        """Download, verify and unbundle ``announcement`` into ``entry``; where the time
        went (for the log)."""
        work = Path(tempfile.mkdtemp(dir=self.root / "downloads"))
        try:
            started = time.monotonic()
            bundle = work / "bundle"
            info = store.get_object(announcement.object, bundle, max_bytes=max_bytes)
            fetched = time.monotonic()
            if (info.digest, info.size) != (announcement.digest, announcement.size):
                raise DigestMismatchError(
                    f"resource {announcement.name} generation {announcement.generation}: object"
                    f" {announcement.object} in {store.url} is {info.size} bytes"
                    f" {info.digest[:23]}..., announced {announcement.size} bytes"
                    f" {announcement.digest[:23]}..."
                )
            staged = work / "entry"
            staged.mkdir()
            read_bundle(bundle, staged / _STEM, max_bytes=max_bytes)
            unbundled = time.monotonic()
            bundle.unlink()
            write_atomically(staged / "announcement.json", announcement.to_json(), durable=True)
            entry.parent.mkdir(parents=True, exist_ok=True)
            if entry.exists():
                shutil.rmtree(entry)
            os.rename(staged, entry)
            return (
                f" (download {fetched - started:.3f}s, unbundle {unbundled - fetched:.3f}s,"
                f" keep {time.monotonic() - unbundled:.3f}s)"
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _mark_accepted(self, name: str, entry: Path) -> None:
        top = max((self._accepted(e) for e in self._entries(name)), default=0)
        if self._accepted(entry) != top or top == 0:
            write_atomically(entry / "accepted", str(top + 1).encode(), durable=True)

    def _prune(self, name: str, keep_entry: Path) -> None:
        others = sorted(
            (e for e in self._entries(name) if e != keep_entry), key=self._accepted, reverse=True
        )
        for old in others[self.keep - 1 :]:
            shutil.rmtree(old, ignore_errors=True)

    def latest(self, name: str) -> Announcement | None:
        """The most recently accepted cached generation of ``name`` (None: none cached)."""
        with self._lock:
            entries = sorted(self._entries(name), key=self._accepted, reverse=True)
            for entry in entries:
                cached = self._cached(entry)
                if cached is not None:
                    return cached
            return None

    def open(self, announcement: Announcement, codec: SnapshotCodec) -> Any:
        """The value of ``announcement`` from the cache only (the store may be down)."""
        with self._lock:
            entry = self._entry(announcement)
            cached = self._cached(entry)
            if cached is None or cached.digest != announcement.digest:
                raise ObjectMissingError(
                    f"resource {announcement.name} generation {announcement.generation}"
                    f" is not in the fleet cache {self.root}"
                )
            return codec.open(entry / _STEM, announcement.generation)

    def save_config(self, revision: int, data: bytes) -> None:
        """Keep the fleet config ``data`` at ``revision``."""
        if len(data) > CONFIG_MAX_BYTES:
            raise FleetError(f"fleet config of {len(data)} bytes, over {CONFIG_MAX_BYTES}")
        write_atomically(
            self.root / "config", orjson.dumps({"revision": revision}) + b"\n" + data, durable=True
        )

    def config(self) -> tuple[int, bytes] | None:
        """``(revision, bytes)`` of the last saved fleet config (None: none)."""
        try:
            with open(self.root / "config", "rb") as src:
                data = src.read(CONFIG_MAX_BYTES + 1024)
        except FileNotFoundError:
            return None
        header, _, body = data.partition(b"\n")
        try:
            revision = orjson.loads(header)["revision"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise FleetError(
                f"fleet cache {self.root}: its config file is damaged: {exc}"
            ) from None
        return int(revision), body
