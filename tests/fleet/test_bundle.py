"""The snapshot bundle: checked whole before a byte is written, nothing outside its stem."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from pineapple.resource.lowlevel import SnapshotFormatError
from server.fleet._bundle import MAGIC, MAX_FILES, ZSTD_MAGIC, read_bundle, write_bundle
from server.fleet._errors import SnapshotTooLargeError


def _bundle(path: Path, header: object, body: bytes, *, magic: bytes = MAGIC) -> Path:
    data = orjson.dumps(header)
    path.write_bytes(magic + len(data).to_bytes(4, "big") + data + body)
    return path


@pytest.mark.parametrize("compress", [True, False])
def test_files_round_trip(tmp_path: Path, compress: bool) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "snap.arrow").write_bytes(b"A" * 3_000_000)
    (src / "snap.idx").write_bytes(b"")
    files = [src / "snap.arrow", src / "snap.idx"]
    bundle = tmp_path / "bundle"
    size = write_bundle(files, src / "snap", bundle, max_bytes=10**7, compress=compress)
    assert size == 3_000_000 + len(MAGIC) + 4 + len(b'{"files":[[".arrow",3000000],[".idx",0]]}')
    stored = bundle.read_bytes()
    if compress:  # a zstd stream, far smaller than the files
        assert stored[:4] == ZSTD_MAGIC and len(stored) < 10_000
    else:
        assert stored[: len(MAGIC)] == MAGIC and len(stored) == size
    out = tmp_path / "out"
    out.mkdir()
    got = read_bundle(bundle, out / "s")
    assert [p.name for p in got] == ["s.arrow", "s.idx"]
    assert (out / "s.arrow").read_bytes() == b"A" * 3_000_000


def _compressed(path: Path, data: bytes) -> Path:
    with pa.CompressedOutputStream(str(path), "zstd") as out:
        out.write(data)
    return path


@pytest.mark.parametrize(
    ("tail", "why"),
    [(b"xy", "longer than its header"), (b"", "shorter than its header")],
)
def test_a_compressed_bundle_must_end_where_its_header_says(
    tmp_path: Path, tail: bytes, why: str
) -> None:
    header = orjson.dumps({"files": [[".a", 1]]})
    body = MAGIC + len(header).to_bytes(4, "big") + header + (b"x" + tail if tail else b"")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SnapshotFormatError, match=why):
        read_bundle(_compressed(tmp_path / "bundle", body), out / "s")
    assert list(out.iterdir()) == []


def test_a_compressed_bundle_is_bounded_before_it_is_decompressed(tmp_path: Path) -> None:
    """A header claiming more than ``max_bytes`` is refused before any file is written (a
    small compressed object cannot unpack into a disk-filling one)."""
    header = orjson.dumps({"files": [[".a", 10**9]]})
    bundle = _compressed(tmp_path / "bundle", MAGIC + len(header).to_bytes(4, "big") + header)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SnapshotTooLargeError, match="over the 1000000 a snapshot may hold"):
        read_bundle(bundle, out / "s", max_bytes=10**6)
    assert list(out.iterdir()) == []


def test_a_corrupt_compressed_stream_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.write_bytes(ZSTD_MAGIC + b"\x00" * 64)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SnapshotFormatError, match="bundle bundle: "):
        read_bundle(bundle, out / "s")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("header", "body", "why"),
    [
        ({"files": [["/../../etc/x", 1]]}, b"x", "not a plain name tail"),
        ({"files": [[".a", 1], [".a", 1]]}, b"xy", "appears twice"),
        ({"files": [[".a", 5]]}, b"xy", "add up to 5 bytes, the body has 2"),
        ({"files": [[".a", -1]]}, b"", "not a byte count"),
        ({"files": [[".a", 1.0]]}, b"x", "not a byte count"),
        ({"files": [[f".{i}", 0] for i in range(MAX_FILES + 1)]}, b"", "at most 64"),
        ({"nope": []}, b"", "bad header"),
        ([1], b"", "bad header"),
    ],
)
def test_a_bad_bundle_is_refused_and_writes_nothing(
    tmp_path: Path, header: object, body: bytes, why: str
) -> None:
    bundle = _bundle(tmp_path / "bundle", header, body)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SnapshotFormatError, match=why):
        read_bundle(bundle, out / "s")
    assert list(out.iterdir()) == []


def test_not_a_bundle_and_an_endless_header_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SnapshotFormatError, match="not a snapshot bundle"):
        read_bundle(_bundle(tmp_path / "b1", {"files": []}, b"", magic=b"PK\x03\x04"), out / "s")
    huge = tmp_path / "b2"
    huge.write_bytes(MAGIC + (2**31).to_bytes(4, "big"))
    with pytest.raises(SnapshotFormatError, match="header over 65536"):
        read_bundle(huge, out / "s")


def test_a_codec_file_outside_its_stem_is_not_bundled(tmp_path: Path) -> None:
    (tmp_path / "other.arrow").write_bytes(b"x")
    with pytest.raises(SnapshotFormatError, match="not beside its stem"):
        write_bundle([tmp_path / "other.arrow"], tmp_path / "snap", tmp_path / "b", max_bytes=99)
