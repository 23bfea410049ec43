from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import NOT_MODIFIED, Manager, RefreshError, StartError


def _write(path: Path, text: str, mtime_ns: int | None = None) -> None:
    path.write_text(text, encoding="utf-8")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def _fetch(kind: str, **params: Any) -> Any:
    fetcher = resources.FileTableFetcher(params, kind)
    return fetcher()


def test_json_object_is_a_lookup_table(tmp_path: Path) -> None:
    path = tmp_path / "boost.json"
    _write(path, json.dumps({"a": 1.5, "b": {"x": 1}}))
    value = _fetch("json", path=str(path))
    assert isinstance(value, dict) and isinstance(value, resources.FileMapping)
    assert value == {"a": 1.5, "b": {"x": 1}}
    assert value.source == str(path)


def test_json_array_is_a_candidate_list_or_keyed_table(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    _write(path, json.dumps([{"id": 1, "s": 0.5}, {"id": 2.0, "s": 0.7}]))
    rows = _fetch("json", path=str(path))
    assert isinstance(rows, list) and isinstance(rows, resources.FileRows)
    assert rows == [{"id": 1, "s": 0.5}, {"id": 2.0, "s": 0.7}]
    keyed = _fetch("json", path=str(path), key="id")
    assert keyed == {"1": {"id": 1, "s": 0.5}, "2": {"id": 2.0, "s": 0.7}}
    assert _fetch("json", path=str(path), key="id", value_column="s") == {"1": 0.5, "2": 0.7}


def test_csv_rows_with_inferred_types_and_keyed_lookup(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    _write(path, "item_id,score,label\n7,0.25,news\n8,1e2,007x\n")
    assert _fetch("csv", path=str(path)) == [
        {"item_id": 7, "score": 0.25, "label": "news"},
        {"item_id": 8, "score": 100.0, "label": "007x"},
    ]
    assert _fetch("csv", path=str(path), infer_types=False)[0] == {
        "item_id": "7",
        "score": "0.25",
        "label": "news",
    }
    assert _fetch("csv", path=str(path), key="item_id", value_column="label") == {
        "7": "news",
        "8": "007x",
    }
    tsv = tmp_path / "items.tsv"
    _write(tsv, "k\tv\na\tb\n")
    assert _fetch("csv", path=str(tsv), delimiter="\t", format="mapping", key="k") == {
        "a": {"k": "a", "v": "b"}
    }


def test_unchanged_file_is_not_modified_and_any_rewrite_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    _write(path, '{"a": 1}', mtime_ns=1_000_000_000)
    fetcher = resources.FileTableFetcher({"path": str(path)}, "json")
    assert fetcher() == {"a": 1}
    assert fetcher() is NOT_MODIFIED
    # Same size, mtime forced back: the inode change time still tells.
    _write(path, '{"a": 2}', mtime_ns=1_000_000_000)
    assert fetcher() == {"a": 2}
    assert fetcher() is NOT_MODIFIED
    _write(path, '{"a": 3}', mtime_ns=2_000_000_000)
    assert fetcher() == {"a": 3}
    _write(path, '{"a": 33}', mtime_ns=2_000_000_000)  # same mtime, new size
    assert fetcher() == {"a": 33}


def test_manager_refresh_swaps_keeps_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "lookup.csv"
    _write(path, "k,v\na,1\n", mtime_ns=1_000_000_000)
    rm = Manager()
    rm.load_from_root_config(
        {
            "resource_config": {
                "lookup": {"type": "csv_file", "params": {"path": str(path), "key": "k"}}
            }
        }
    )
    rm.start()
    try:
        assert rm.refresh("lookup") == "not_modified"
        _write(path, "k,v\na,1\nb,2\n", mtime_ns=2_000_000_000)
        assert rm.refresh("lookup") == "swapped"
        _write(path, "k,v\na,1\na,2\n", mtime_ns=3_000_000_000)
        with pytest.raises(RefreshError, match="duplicate key 'a'"):
            rm.refresh("lookup")
        with rm.get("lookup") as table:  # type: ignore[union-attr]
            assert table == {"a": {"k": "a", "v": 1}, "b": {"k": "b", "v": 2}}
        status = rm.status_of("lookup")
        assert status.summary.startswith("csv_file: mapping of 2 keys")
        assert status.summary.endswith(f"from {path}")
        assert status.interval == 60
    finally:
        rm.stop()


@pytest.mark.parametrize(
    ("kind", "text", "params", "fragment"),
    [
        ("json", "{not json", {}, "invalid JSON"),
        ("json", "[1, 2]", {}, "row 0 is int, not an object"),
        ("json", '"x"', {}, "must hold an object or an array, not str"),
        ("json", '{"a": 1}', {"format": "list"}, "need an array of rows"),
        ("json", '[{"id": 1}]', {"format": "mapping"}, "needs 'key'"),
        ("json", '[{"id": 1}, {}]', {"key": "id"}, "row 1 has no 'id'"),
        ("csv", "a,b\n1,2,3\n", {}, "line 2: wrong number of fields"),
    ],
)
def test_bad_files_are_source_errors_naming_the_file(
    tmp_path: Path, kind: str, text: str, params: dict[str, Any], fragment: str
) -> None:
    path = tmp_path / f"bad.{kind}"
    _write(path, text)
    with pytest.raises(resources.SourceError) as info:
        _fetch(kind, path=str(path), **params)
    assert f"{kind}_file {path}" in str(info.value)
    assert fragment in str(info.value)


def test_missing_file_fails_start(tmp_path: Path) -> None:
    rm = Manager()
    path = tmp_path / "absent.json"
    rm.load_from_root_config(
        {"resource_config": {"t": {"type": "json_file", "params": {"path": str(path)}}}}
    )
    with pytest.raises(StartError, match=r"'t'.*json_file .*absent\.json: No such file"):
        rm.start()


@pytest.mark.parametrize(
    ("kind", "params", "fragment"),
    [
        ("json_file", {}, "'path' is required"),
        ("json_file", {"path": "x", "format": "table"}, "'format': must be one of"),
        ("json_file", {"path": "x", "format": "list", "key": "id"}, "'key'"),
        ("json_file", {"path": "x", "value_column": "v"}, "'value_column': needs 'key'"),
        ("csv_file", {"path": "x", "format": "mapping"}, "'key': required"),
        ("csv_file", {"path": "x", "delimiter": "::"}, "'delimiter'"),
    ],
)
def test_bad_params_are_config_errors(kind: str, params: dict[str, Any], fragment: str) -> None:
    rm = Manager()
    with pytest.raises(ConfigError) as info:
        rm.load_from_root_config({"resource_config": {"t": {"type": kind, "params": params}}})
    assert "resource 't'" in str(info.value)
    assert fragment in str(info.value)


def test_relative_paths_and_env_paths_resolve_against_base_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "m.json").write_text('{"a": 1}')
    monkeypatch.setenv("PINE_TEST_TABLE_PATH", "data/m.json")
    monkeypatch.chdir(tmp_path)  # a working directory where data/m.json does not exist
    config = {
        "resource_config": {
            "plain": {"type": "json_file", "params": {"path": "data/m.json"}},
            "from_env": {"type": "json_file", "params": {"path": "${PINE_TEST_TABLE_PATH}"}},
            "absolute": {"type": "json_file", "params": {"path": str(folder / "data/m.json")}},
        }
    }
    rm = Manager()
    rm.load_from_root_config(config, base_dir=folder)
    rm.start()
    try:
        for name in ("plain", "from_env", "absolute"):
            handle = rm.get(name)
            assert handle is not None
            with handle as table:
                assert dict(table) == {"a": 1}
    finally:
        rm.stop()
