"""Moving an object's bytes: hashed, bounded in bytes and time, complete or absent.

Both backends read and write objects through these two: :func:`digest_of`
(what a put records) and :class:`Download` (what a get writes and verifies).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from types import TracebackType

from ._errors import DigestMismatchError, SnapshotTooLargeError, StoreUnavailableError
from ._store import ObjectInfo

__all__ = ["CHUNK_BYTES", "DIGEST_PREFIX", "Download", "digest_of"]

CHUNK_BYTES = 1024 * 1024
"""Objects move in chunks of this size (also the NATS Object Store chunk size)."""
DIGEST_PREFIX = "sha256="


def digest_of(source: Path, *, name: str, max_bytes: int) -> ObjectInfo:
    """The size and digest of ``source`` (read once, at most ``max_bytes`` + 1 bytes)."""
    hasher = hashlib.sha256()
    size = 0
    with open(source, "rb") as data:
        while chunk := data.read(CHUNK_BYTES):
            size += len(chunk)
            if size > max_bytes:
                raise SnapshotTooLargeError(
                    f"object {name}: {source} is over the {max_bytes} bytes a snapshot may hold"
                )
            hasher.update(chunk)
    return ObjectInfo(name=name, size=size, digest=DIGEST_PREFIX + hasher.hexdigest())


class Download:
    """Writes object ``info`` to ``dest`` chunk by chunk; :meth:`finish` verifies and renames.

    Bounds: at most ``info.size`` bytes are accepted (more is a mismatch),
    ``info.size`` itself at most ``max_bytes``, and every chunk is taken
    before ``deadline`` (``time.monotonic()``), else
    :class:`StoreUnavailableError`. Used as a context manager: on any
    error the partial file is removed, so ``dest`` is complete or absent.
    """

    def __init__(self, info: ObjectInfo, dest: Path, *, max_bytes: int, deadline: float, url: str):
        if info.size > max_bytes:
            raise SnapshotTooLargeError(
                f"object {info.name} in {url}: {info.size} bytes, over the {max_bytes} allowed"
            )
        self.info = info
        self.dest = Path(dest)
        self._deadline = deadline
        self._url = url
        self._partial = self.dest.with_name(f".{self.dest.name}.part")
        self._file = open(self._partial, "wb")  # noqa: SIM115 (closed by __exit__/finish)
        self._hasher = hashlib.sha256()
        self.size = 0

    def __enter__(self) -> Download:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._file.closed:
            self._file.close()
        if kind is not None:
            self._partial.unlink(missing_ok=True)

    def write(self, chunk: bytes) -> None:
        """Take the next chunk (bounded: size and deadline)."""
        if time.monotonic() > self._deadline:
            raise StoreUnavailableError(
                f"{self._url}: get_object {self.info.name}: not downloaded within its deadline"
                f" ({self.size} of {self.info.size} bytes)"
            )
        self.size += len(chunk)
        if self.size > self.info.size:
            raise DigestMismatchError(
                f"object {self.info.name} in {self._url}: more than its recorded"
                f" {self.info.size} bytes"
            )
        self._hasher.update(chunk)
        self._file.write(chunk)

    def finish(self) -> ObjectInfo:
        """Check size and digest, then rename into ``dest``; the verified info.

        Not synced to disk: a download is a staging file (the cache unbundles it and
        removes it; what it keeps, it makes durable itself)."""
        self._file.close()
        if self.size != self.info.size:
            raise DigestMismatchError(
                f"object {self.info.name} in {self._url}: truncated, {self.size} of its"
                f" recorded {self.info.size} bytes"
            )
        digest = DIGEST_PREFIX + self._hasher.hexdigest()
        if digest != self.info.digest:
            raise DigestMismatchError(
                f"object {self.info.name} in {self._url}: digest {digest[:23]}...,"
                f" recorded {self.info.digest[:23]}... (corrupted)"
            )
        os.rename(self._partial, self.dest)
        return self.info
