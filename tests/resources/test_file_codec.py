"""``FILE_CODEC``: ``json_file``/``csv_file`` values as JSON that round-trips, never pickle."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple.resource.lowlevel import SnapshotFormatError, SnapshotWriteError
from resources.lowlevel import FILE_CODEC


def _round_trip(value: Any, tmp_path: Path) -> tuple[Any, list[Path]]:
    files = list(FILE_CODEC.write(value, tmp_path / "snap"))
    return FILE_CODEC.open(tmp_path / "snap", 1), files


def test_a_mapping_keeps_its_class_and_attributes(tmp_path: Path) -> None:
    value = resources.FileMapping({"a": {"x": [1, 2.5, None, True, "t"]}, "b": "é"})
    value.source, value.nbytes, value.stamp = "m.json", 99, (1, 2, 3, 4)
    got, files = _round_trip(value, tmp_path)
    assert [f.name for f in files] == ["snap.json"]
    assert type(got) is resources.FileMapping and got == value
    assert (got.source, got.nbytes, got.stamp) == ("m.json", 99, (1, 2, 3, 4))


def test_rows_and_plain_values_round_trip(tmp_path: Path) -> None:
    rows = resources.FileRows([{"id": 1, "score": 0.1}, {"id": 2, "score": -3e-9}])
    got, _ = _round_trip(rows, tmp_path)
    assert type(got) is resources.FileRows and got == rows and got.stamp is None
    (tmp_path / "p").mkdir()
    plain, _ = _round_trip({"k": [1]}, tmp_path / "p")
    assert type(plain) is dict and plain == {"k": [1]}


def test_wide_integers_and_infinite_floats_round_trip(tmp_path: Path) -> None:
    # csv_file makes these from cells such as 123456789012345678901234 and 1e999
    rows = resources.FileRows([{"id": 123456789012345678901234, "x": math.inf, "y": -math.inf}])
    got, files = _round_trip(rows, tmp_path)
    assert [f.name for f in files] == ["snap.wide.json"]
    assert got == rows and type(got[0]["id"]) is int


def test_a_value_of_another_type_is_refused_and_a_damaged_file_named(tmp_path: Path) -> None:
    with pytest.raises(SnapshotWriteError, match="a set, not a file table"):
        FILE_CODEC.write({1, 2}, tmp_path / "snap")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "snap.json").write_bytes(b'{"kind": "mapping", "data": [')
    with pytest.raises(SnapshotFormatError, match=r"snap\.json"):
        FILE_CODEC.open(tmp_path / "snap", 1)
    (tmp_path / "snap.json").write_bytes(b'{"kind": "mapping", "data": [1]}')
    with pytest.raises(SnapshotFormatError, match="kind 'mapping'"):
        FILE_CODEC.open(tmp_path / "snap", 1)
