"""The directory backend of the fleet store: a folder on a shared volume (or one host).

Layout under the root::

    objects/<hex name>.data        an object's bytes
    objects/<hex name>.info        its ObjectInfo (JSON), written after the data
    kv/<bucket>/lock               flock'ed by every writer of the bucket
    kv/<bucket>/revision           the bucket's last revision (text)
    kv/<bucket>/keys/<hex key>/<revision, 20 digits>   one record: a JSON line, then the value

Guarantees:
- Every file is written under a temporary name and renamed into place
  (atomic): a reader sees a whole file or none.
- A bucket's writers serialise on ``kv/<bucket>/lock`` (``flock``, taken
  within the store's ``timeout`` or :class:`StoreUnavailableError`): under
  it a writer reads the revision counter, writes the record file of
  revision + 1, then the counter. So revisions grow by one per change, a
  compare-and-set reads and writes under one lock, and once a reader sees
  counter ``C``, every record up to ``C`` is on disk (unless pruned by the
  key's history bound).
- An object's ``.info`` is renamed into place after its ``.data``: an object
  listed in ``objects()`` has its bytes. A get verifies size and digest, so a
  file edited or cut on the volume is refused (:class:`DigestMismatchError`).
- Waits for the lock are bounded by ``timeout``; reads and writes of the
  volume itself are not (a hung NFS mount hangs them): NATS is the store that
  answers within its deadline whatever happens to a server.
- A watch is one thread polling the bucket's counter every
  :data:`POLL_SECONDS` (one small read); when it moved, the records above the
  last seen revision are delivered in revision order.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from .._atomic_file import write_atomically
from ._errors import (
    FleetError,
    ObjectMissingError,
    RevisionConflictError,
    SnapshotTooLargeError,
    StoreUnavailableError,
)
from ._store import (
    BUCKET_HISTORY,
    MAX_RECORD_BYTES,
    FleetLimits,
    ObjectInfo,
    Record,
    check_key,
    check_object_name,
    check_record,
)
from ._transfer import CHUNK_BYTES, Download, digest_of
from ._watch_thread import WatchThread

__all__ = ["POLL_SECONDS", "DirectoryStore"]

POLL_SECONDS = 0.05
"""How often a directory watch reads its bucket's revision counter."""
_LOCK_RETRY_SECONDS = 0.005
_INFO_MAX_BYTES = 4096
_RECORD_HEADER_MAX = 256

_log = logging.getLogger("pineapple.fleet")


def _hex(text: str) -> str:
    return text.encode().hex()


def _unhex(name: str) -> str:
    return bytes.fromhex(name).decode()


class DirectoryStore:
    """A :class:`~server.fleet.FleetStore` in a directory (see the module's Guarantees).

    >>> store = DirectoryStore("/mnt/fleet")   # doctest: +SKIP
    """

    def __init__(
        self, root: str | Path, *, timeout: float = 5.0, limits: FleetLimits | None = None
    ) -> None:
        self.root = Path(root)
        self.url = f"file://{self.root}"
        self.timeout = timeout
        self.limits = limits or FleetLimits()
        self._watches: list[_DirectoryWatch] = []
        self._watches_lock = threading.Lock()
        try:
            (self.root / "objects").mkdir(parents=True, exist_ok=True)
            for bucket in BUCKET_HISTORY:
                (self.root / "kv" / bucket / "keys").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailableError(f"{self.url}: cannot open the directory: {exc}") from exc

    # objects

    def _object_paths(self, name: str) -> tuple[Path, Path]:
        stem = self.root / "objects" / _hex(check_object_name(name))
        return stem.with_suffix(".data"), stem.with_suffix(".info")

    def put_object(self, name: str, source: Path) -> ObjectInfo:
        data_path, info_path = self._object_paths(name)
        info = digest_of(source, name=name, max_bytes=self.limits.max_snapshot_bytes)
        held = sum(o.size for o in self.objects() if o.name != name)
        if held + info.size > self.limits.max_bucket_bytes:
            raise SnapshotTooLargeError(
                f"{self.url}: object {name} of {info.size} bytes would take the bucket to"
                f" {held + info.size} bytes, over its {self.limits.max_bucket_bytes}"
            )
        deadline = time.monotonic() + self.limits.download_timeout
        tmp = data_path.with_name(f".{data_path.name}.{os.getpid()}.tmp")
        try:
            with open(source, "rb") as src, open(tmp, "wb") as out:
                copied = 0
                while copied < info.size and (chunk := src.read(CHUNK_BYTES)):
                    if time.monotonic() > deadline:
                        raise StoreUnavailableError(
                            f"{self.url}: put_object {name}: not written within its deadline"
                        )
                    out.write(chunk[: info.size - copied])
                    copied += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.rename(tmp, data_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        write_atomically(
            info_path,
            orjson.dumps({"name": name, "size": info.size, "digest": info.digest}),
            durable=True,
        )
        return info

    def _info(self, info_path: Path) -> ObjectInfo | None:
        try:
            with open(info_path, "rb") as src:
                data = src.read(_INFO_MAX_BYTES + 1)
        except FileNotFoundError:
            return None
        try:
            doc = orjson.loads(data)
            return ObjectInfo(name=str(doc["name"]), size=int(doc["size"]), digest=doc["digest"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise FleetError(
                f"{self.url}: {info_path.name} is not an object's info: {exc}"
            ) from None

    def get_object(self, name: str, dest: Path, *, max_bytes: int) -> ObjectInfo:
        data_path, info_path = self._object_paths(name)
        info = self._info(info_path)
        if info is None:
            raise ObjectMissingError(f"object {name} is not in {self.url}")
        deadline = time.monotonic() + self.limits.download_timeout
        try:
            src = open(data_path, "rb")  # noqa: SIM115 (closed by the with below)
        except FileNotFoundError:
            raise ObjectMissingError(f"object {name} in {self.url} has no bytes") from None
        with src, Download(info, dest, max_bytes=max_bytes, deadline=deadline, url=self.url) as d:
            while chunk := src.read(min(CHUNK_BYTES, info.size + 1 - d.size)):
                d.write(chunk)
            return d.finish()

    def delete_object(self, name: str) -> None:
        data_path, info_path = self._object_paths(name)
        info_path.unlink(missing_ok=True)
        data_path.unlink(missing_ok=True)

    def objects(self) -> list[ObjectInfo]:
        found = []
        for path in sorted((self.root / "objects").glob("*.info")):
            info = self._info(path)
            if info is not None:
                found.append(info)
        return found

    # records

    def _bucket(self, bucket: str) -> Path:
        check_key(bucket, "x")
        return self.root / "kv" / bucket

    @contextmanager
    def _locked(self, bucket: str, operation: str) -> Iterator[Path]:
        """Hold ``bucket``'s flock (taken within ``timeout``); yields the bucket's folder."""
        folder = self._bucket(bucket)
        fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                if time.monotonic() > deadline:
                    raise StoreUnavailableError(
                        f"{self.url}: {operation} {bucket}: its lock is held past {self.timeout:g}s"
                    )
                time.sleep(_LOCK_RETRY_SECONDS)
            yield folder
        finally:
            os.close(fd)

    def _revision(self, folder: Path) -> int:
        try:
            return int((folder / "revision").read_bytes() or b"0")
        except FileNotFoundError:
            return 0

    def _read_record(self, key: str, path: Path) -> Record | None:
        try:
            with open(path, "rb") as src:
                data = src.read(_RECORD_HEADER_MAX + MAX_RECORD_BYTES + 1)
        except FileNotFoundError:
            return None  # pruned meanwhile
        header, _, value = data.partition(b"\n")
        try:
            if len(header) > _RECORD_HEADER_MAX or len(value) > MAX_RECORD_BYTES:
                raise ValueError("longer than a record")
            doc = orjson.loads(header)
            return Record(
                key=key,
                value=value,
                revision=int(doc["revision"]),
                time=float(doc["time"]),
                deleted=bool(doc["deleted"]),
            )
        except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise FleetError(f"{self.url}: record {path.name} of {key}: damaged ({exc})") from None

    def _revisions(self, key_dir: Path) -> list[int]:
        try:
            return sorted(int(p.name) for p in key_dir.iterdir() if p.name.isdigit())
        except FileNotFoundError:
            return []

    def _latest(self, folder: Path, key: str, *, at_most: int | None = None) -> Record | None:
        key_dir = folder / "keys" / _hex(key)
        for revision in reversed(self._revisions(key_dir)):
            if at_most is None or revision <= at_most:
                return self._read_record(key, key_dir / f"{revision:020d}")
        return None

    def _append(self, bucket: str, folder: Path, key: str, value: bytes, deleted: bool) -> int:
        """Under the bucket's lock: write the next revision of ``key``, prune its history."""
        revision = self._revision(folder) + 1
        key_dir = folder / "keys" / _hex(key)
        key_dir.mkdir(exist_ok=True)
        header = orjson.dumps({"revision": revision, "time": time.time(), "deleted": deleted})
        write_atomically(key_dir / f"{revision:020d}", header + b"\n" + value, durable=True)
        write_atomically(folder / "revision", str(revision).encode(), durable=True)
        for old in self._revisions(key_dir)[: -BUCKET_HISTORY[bucket]]:
            (key_dir / f"{old:020d}").unlink(missing_ok=True)
        return revision

    def get(self, bucket: str, key: str) -> Record | None:
        record = self._latest(self._bucket(bucket), check_key(bucket, key))
        return None if record is None or record.deleted else record

    def put(self, bucket: str, key: str, value: bytes) -> int:
        check_record(bucket, key, value)
        with self._locked(bucket, "put") as folder:
            return self._append(bucket, folder, key, value, deleted=False)

    def update(self, bucket: str, key: str, value: bytes, *, revision: int) -> int:
        check_record(bucket, key, value)
        with self._locked(bucket, "update") as folder:
            current = self._latest(folder, key)
            if revision == 0:
                if current is not None and not current.deleted:
                    raise RevisionConflictError(
                        f"{self.url}: {bucket} {key} exists (revision {current.revision})"
                    )
            elif current is None or current.revision != revision:
                found = 0 if current is None else current.revision
                raise RevisionConflictError(
                    f"{self.url}: {bucket} {key} is at revision {found}, not {revision}"
                )
            return self._append(bucket, folder, key, value, deleted=False)

    def delete(self, bucket: str, key: str) -> None:
        check_key(bucket, key)
        with self._locked(bucket, "delete") as folder:  # a marker, as JetStream writes one
            self._append(bucket, folder, key, b"", deleted=True)

    def _key_names(self, folder: Path) -> list[str]:
        return sorted(_unhex(p.name) for p in (folder / "keys").iterdir())

    def keys(self, bucket: str) -> list[str]:
        folder = self._bucket(bucket)
        return [k for k in self._key_names(folder) if self.get(bucket, k) is not None]

    def history(self, bucket: str, key: str) -> list[Record]:
        key_dir = self._bucket(bucket) / "keys" / _hex(check_key(bucket, key))
        records = (self._read_record(key, key_dir / f"{r:020d}") for r in self._revisions(key_dir))
        return [r for r in records if r is not None]

    def changes(self, bucket: str, after: int, upto: int) -> list[Record]:
        """Every kept record with ``after < revision <= upto``, in revision order."""
        folder = self._bucket(bucket)
        found = []
        for key in self._key_names(folder):
            key_dir = folder / "keys" / _hex(key)
            for revision in self._revisions(key_dir):
                if after < revision <= upto:
                    record = self._read_record(key, key_dir / f"{revision:020d}")
                    if record is not None:
                        found.append(record)
        return sorted(found, key=lambda r: r.revision)

    def current(self, bucket: str) -> tuple[int, list[Record]]:
        """The bucket's revision and its current (not deleted) records at it."""
        folder = self._bucket(bucket)
        top = self._revision(folder)
        records = [self._latest(folder, k, at_most=top) for k in self._key_names(folder)]
        live = [r for r in records if r is not None and not r.deleted]
        return top, sorted(live, key=lambda r: r.revision)

    def revision(self, bucket: str) -> int:
        """The bucket's last revision (0 before any change)."""
        return self._revision(self._bucket(bucket))

    def watch(self, bucket: str, on_change: Callable[[Record], None]) -> _DirectoryWatch:
        seen, records = self.current(bucket)  # before returning: later changes follow
        watch = _DirectoryWatch(self, bucket, on_change, seen, records)
        with self._watches_lock:
            self._watches.append(watch)
        watch.start()
        return watch

    def close(self) -> None:
        with self._watches_lock:
            watches, self._watches = self._watches, []
        for watch in watches:
            watch.stop()


class _DirectoryWatch(WatchThread):
    """Polls the bucket's revision counter (see the module's Guarantees)."""

    def __init__(
        self,
        store: DirectoryStore,
        bucket: str,
        on_change: Callable[[Record], None],
        seen: int,
        records: list[Record],
    ) -> None:
        super().__init__(bucket, on_change, join_seconds=max(1.0, store.timeout))
        self._store = store
        self._seen = seen
        self._first = records

    def follow(self) -> None:
        seen = self._seen
        for record in self._first:
            self.deliver(record)
        while not self.stopped.wait(POLL_SECONDS):
            try:
                top = self._store.revision(self.bucket)
                if top > seen:
                    for record in self._store.changes(self.bucket, seen, top):
                        self.deliver(record)
                    seen = top
            except OSError as exc:
                _log.warning("fleet watch of %s in %s: %s", self.bucket, self._store.url, exc)
