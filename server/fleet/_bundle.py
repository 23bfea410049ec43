"""The snapshot bundle: a codec's files as ONE object, in a bounded, data-only format.

A codec writes a value as files ``<stem.name><suffix>`` beside a stem
(``SnapshotCodec``); a bundle carries them between hosts::

    MAGIC                         b"PINEAPPLE-BUNDLE/1\\n"
    header length                 4 bytes, big-endian, at most HEADER_MAX_BYTES
    header                        JSON: {"files": [[suffix, size], ...]}
    the files' bytes              concatenated, in the header's order

Reading checks everything before writing a byte: the magic, the header's
length and shape, at most :data:`MAX_FILES` files, each suffix a plain
file-name tail (letters, digits, ``._-``, no ``/``, so nothing lands outside
the stem's folder, no two alike), and that the sizes add up to exactly the
bundle's length. Nothing in it is executed or unpickled.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, cast

import orjson

from pineapple.resource.lowlevel import SnapshotFormatError

from ._errors import SnapshotTooLargeError
from ._transfer import CHUNK_BYTES

__all__ = [
    "HEADER_MAX_BYTES",
    "MAGIC",
    "MAX_FILES",
    "UNBUNDLE_CHUNK_BYTES",
    "ZSTD_MAGIC",
    "read_bundle",
    "write_bundle",
]

MAGIC = b"PINEAPPLE-BUNDLE/1\n"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first bytes of a zstd frame: a compressed bundle."""
HEADER_MAX_BYTES = 64 * 1024
MAX_FILES = 64
UNBUNDLE_CHUNK_BYTES = 32 * 1024 * 1024
"""A bundle is unpacked through one buffer of this size (the reader's memory bound, freed
after), decompressed into it and written from it unbuffered: no copy per chunk, and few
enough chunks that a pod whose request threads hold the GIL loses little to taking it
back after each (a 106 MB table: 1 MiB chunks 1.4 to 2.3 s, 32 MiB 0.5 s, measured
beside two busy threads)."""
_SUFFIX = re.compile(r"[A-Za-z0-9_.-]{0,64}")


def _suffix_of(path: Path, stem: Path) -> str:
    if path.parent != stem.parent or not path.name.startswith(stem.name):
        raise SnapshotFormatError(f"codec file {path} is not beside its stem {stem}")
    suffix = path.name[len(stem.name) :]
    if not _SUFFIX.fullmatch(suffix):
        raise SnapshotFormatError(f"codec file {path}: suffix {suffix!r} is not a plain name tail")
    return suffix


def write_bundle(
    files: Sequence[Path], stem: Path, out: Path, *, max_bytes: int, compress: bool = True
) -> int:
    """Bundle ``files`` (a codec's, at ``stem``) into ``out``, zstd-compressed unless
    ``compress`` is False; the bundle's length before compression (<= ``max_bytes``)."""
    entries = [(_suffix_of(Path(f), stem), os.stat(f).st_size) for f in files]
    if len(entries) > MAX_FILES:
        raise SnapshotFormatError(f"snapshot {stem}: {len(entries)} files, over {MAX_FILES}")
    header = orjson.dumps({"files": entries})
    total = len(MAGIC) + 4 + len(header) + sum(size for _, size in entries)
    if total > max_bytes:
        raise SnapshotTooLargeError(
            f"snapshot {stem.name}: {total} bytes, over the {max_bytes} a snapshot may hold"
            " (--fleet-max-snapshot-bytes)"
        )
    with _sink(out, compress) as sink:
        sink.write(MAGIC + len(header).to_bytes(4, "big") + header)
        for path, (_, size) in zip(files, entries, strict=True):
            with open(path, "rb") as src:
                left = size
                while left and (chunk := src.read(min(CHUNK_BYTES, left))):
                    sink.write(chunk)
                    left -= len(chunk)
            if left:
                raise SnapshotFormatError(f"codec file {path} shrank while bundled")
    return total


def _sink(out: Path, compress: bool) -> BinaryIO:
    if not compress:
        return open(out, "wb")
    import pyarrow as pa  # zstd streams; only a bundle's writer and reader load Arrow

    return cast(BinaryIO, pa.CompressedOutputStream(str(out), "zstd"))


def _source(path: Path) -> tuple[_Reading, bool]:
    """``path`` opened for reading, decompressing when it is a compressed bundle."""
    with open(path, "rb") as probe:
        compressed = probe.read(len(ZSTD_MAGIC)) == ZSTD_MAGIC
    return _Reading(path, compressed), compressed


class _Reading:
    """A bundle read as its bundle (decompressed when ``compressed``); a stream that does
    not decompress (corrupt, truncated) raises ``SnapshotFormatError`` naming the bundle."""

    def __init__(self, path: Path, compressed: bool) -> None:
        import pyarrow as pa  # zstd streams; only a bundle's writer and reader load Arrow

        self._name = path.name
        raw = pa.OSFile(str(path), "r")
        self._stream = pa.CompressedInputStream(raw, "zstd") if compressed else raw
        self._errors = (OSError, pa.ArrowException)

    def read(self, size: int) -> bytes:
        """At most ``size`` bytes (fewer at the end)."""
        try:
            return bytes(self._stream.read(size))
        except self._errors as exc:
            raise SnapshotFormatError(f"bundle {self._name}: cannot decompress: {exc}") from None

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` (fewer bytes at the end); how many. Decompressed straight into it:
        no buffer of Arrow's pool is left behind in the pod's memory."""
        try:
            return int(self._stream.readinto(view))
        except self._errors as exc:
            raise SnapshotFormatError(f"bundle {self._name}: cannot decompress: {exc}") from None

    def __enter__(self) -> _Reading:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def _header(path: Path, data: bytes, length: int | None, max_bytes: int) -> list[tuple[str, int]]:
    try:
        doc = orjson.loads(data)
        files = doc["files"]
        if not isinstance(files, list) or len(files) > MAX_FILES:
            raise ValueError(f"'files' must be a list of at most {MAX_FILES}")
        entries = []
        for item in files:
            suffix, size = item
            if not isinstance(suffix, str) or not _SUFFIX.fullmatch(suffix):
                raise ValueError(f"suffix {str(suffix)[:70]!r} is not a plain name tail")
            if type(size) is not int or size < 0:
                raise ValueError(f"size {size!r} of {suffix!r} is not a byte count")
            entries.append((suffix, size))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SnapshotFormatError(f"bundle {path.name}: bad header: {exc}") from None
    if len({s for s, _ in entries}) != len(entries):
        raise SnapshotFormatError(f"bundle {path.name}: a suffix appears twice")
    if sum(size for _, size in entries) > max_bytes:
        raise SnapshotTooLargeError(
            f"bundle {path.name}: its files add up to {sum(size for _, size in entries)} bytes,"
            f" over the {max_bytes} a snapshot may hold"
        )
    if length is None:  # compressed: the stream's end is checked after the files
        return entries
    body = length - len(MAGIC) - 4 - len(data)
    if sum(size for _, size in entries) != body:
        raise SnapshotFormatError(
            f"bundle {path.name}: the header's sizes add up to"
            f" {sum(size for _, size in entries)} bytes, the body has {body}"
        )
    return entries


def _write_all(sink: BinaryIO, chunk: memoryview) -> None:
    """Write all of ``chunk`` to an unbuffered file (bounded: each write moves >= 1 byte,
    a write that moves none raises)."""
    while chunk:
        done = sink.write(chunk)
        if not done:
            raise OSError(f"cannot write {sink.name}: the write moved no byte")
        chunk = chunk[done:]


def read_bundle(path: Path, stem: Path, *, max_bytes: int = 1 << 62) -> list[Path]:
    """Unpack bundle ``path`` (compressed or not) into files at ``stem`` (see the module's
    checks; the files add up to at most ``max_bytes``); the files.

    On any error the files written so far are removed.
    """
    source, compressed = _source(path)
    length = None if compressed else os.stat(path).st_size
    written: list[Path] = []
    try:
        with source as src:
            if src.read(len(MAGIC)) != MAGIC:
                raise SnapshotFormatError(f"bundle {path.name}: not a snapshot bundle")
            size = int.from_bytes(src.read(4), "big")
            if size > HEADER_MAX_BYTES:
                raise SnapshotFormatError(f"bundle {path.name}: header over {HEADER_MAX_BYTES}")
            entries = _header(path, src.read(size), length, max_bytes)
            chunk = memoryview(bytearray(UNBUNDLE_CHUNK_BYTES))  # the one buffer, reused
            for suffix, left in entries:
                target = stem.with_name(stem.name + suffix)
                written.append(target)
                with open(target, "xb", buffering=0) as sink:
                    while left and (got := src.readinto(chunk[: min(len(chunk), left)])):
                        _write_all(sink, chunk[:got])  # unbuffered: no copy of the chunk
                        left -= got
                if left:
                    raise SnapshotFormatError(f"bundle {path.name}: shorter than its header")
            if compressed and src.read(1):
                raise SnapshotFormatError(f"bundle {path.name}: longer than its header")
    except BaseException:
        for target in written:
            target.unlink(missing_ok=True)
        raise
    return written
