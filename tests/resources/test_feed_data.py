"""feed_data with the embedded SQLite source, and its param checks (no services needed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import NOT_MODIFIED, Manager, StartError
from pineapple.resource.lowlevel import default_registry

SECRET = "pw-Very-Secret-42"


def _config(**params: Any) -> dict[str, Any]:
    return {"resource_config": {"feed": {"type": "feed_data", "interval": 600, "params": params}}}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "feed.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE recommend_feed_item (id INTEGER PRIMARY KEY, category TEXT, "
        "tag_ids TEXT, score REAL, updated_at INTEGER)"
    )
    conn.executemany(
        "INSERT INTO recommend_feed_item VALUES (?, ?, ?, ?, ?)",
        [
            (1, "news", "[10, 20]", 0.5, 1),
            (2, "sport", "20,30", 0.9, 1),
            (3, "news", "[30]", 0.7, 1),
        ],
    )
    conn.commit()
    conn.close()
    return path


def _update(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


def test_schema_is_registered() -> None:
    schema = default_registry().get("feed_data")
    assert schema is resources.lowlevel.FEED_DATA_SCHEMA
    assert schema.default_interval == 600
    assert {"mysql_dsn", "sqlite_path", "table", "query", "index_columns"} <= set(schema.params)


def test_sqlite_load_recall_refresh_and_not_modified(db: Path) -> None:
    rm = Manager()
    rm.load_from_root_config(
        _config(
            sqlite_path=str(db),
            index_columns=["category", "tag_ids"],
            version_query="SELECT MAX(updated_at), COUNT(*) FROM recommend_feed_item",
        )
    )
    rm.start()
    try:
        with rm.get("feed") as table:  # type: ignore[union-attr]
            assert isinstance(table, resources.FeedTable)
            assert len(table) == 3
            hits = table.match({"tag_ids": 20}, order_by="score", descending=True)
            assert [r["id"] for r in hits] == [2, 1]
        assert rm.refresh("feed") == "not_modified"
        assert rm.status_of("feed").version == 1

        _update(
            db, "UPDATE recommend_feed_item SET category = 'sport', updated_at = 2 WHERE id = 3"
        )
        assert rm.refresh("feed") == "swapped"
        with rm.get("feed") as table:  # type: ignore[union-attr]
            assert [r["id"] for r in table.match({"category": "sport"})] == [2, 3]
        assert rm.refresh("feed") == "not_modified"
        status = rm.status_of("feed")
        assert status.version == 2
        assert status.summary.startswith("feed_data: 3 rows x 5 columns, indices category(2 keys)")
        assert f"from sqlite {db}" in status.summary
        assert "index tag_ids: 3 distinct values" in (rm.describe("feed") or "")
    finally:
        rm.stop()


def test_without_version_query_every_refresh_reloads(db: Path) -> None:
    fetcher = resources.FeedDataFetcher({"sqlite_path": str(db)})
    try:
        first, second = fetcher(), fetcher()
        assert isinstance(first, resources.FeedTable) and isinstance(second, resources.FeedTable)
        assert first is not second
    finally:
        fetcher.close()


def test_query_and_order_columns(db: Path) -> None:
    fetcher = resources.FeedDataFetcher(
        {
            "sqlite_path": str(db),
            "query": "SELECT id, category, score FROM recommend_feed_item WHERE score > 0.6",
            "index_columns": ["category"],
            "order_columns": ["score"],
        }
    )
    try:
        table = fetcher()
        assert isinstance(table, resources.FeedTable)
        assert table.columns == ("id", "category", "score")
        assert len(table.prepared_ranks()) == 2  # built at load, not on the first request
        assert [r["id"] for r in table.match(order_by="score", descending=True)] == [2, 3]
    finally:
        fetcher.close()


def test_version_unchanged_returns_not_modified_directly(db: Path) -> None:
    fetcher = resources.FeedDataFetcher(
        {"sqlite_path": str(db), "version_query": "SELECT COUNT(*) FROM recommend_feed_item"}
    )
    try:
        assert isinstance(fetcher(), resources.FeedTable)
        assert fetcher() is NOT_MODIFIED
        _update(db, "DELETE FROM recommend_feed_item WHERE id = 1")
        table = fetcher()
        assert isinstance(table, resources.FeedTable) and len(table) == 2
        assert table.version == (2,)
    finally:
        fetcher.close()


def test_missing_sqlite_file_fails_start_naming_the_resource(tmp_path: Path) -> None:
    rm = Manager()
    rm.load_from_root_config(_config(sqlite_path=str(tmp_path / "absent.sqlite")))
    with pytest.raises(StartError, match=r"'feed'.*SourceError: sqlite .*absent\.sqlite"):
        rm.start()


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({}, "(or 'mysql_dsn', or 'sqlite_path') is required"),
        ({"mysql_dsn": f"root:{SECRET}@tcp(h:3306)/d", "sqlite_path": "x"}, "'sqlite_path'"),
        ({"mysql_dsn": f"redis://root:{SECRET}@h/d"}, "'mysql_dsn': unsupported scheme"),
        ({"mysql_dsn": f"root:{SECRET}@h:3306/d"}, "'mysql_dsn': not a MySQL DSN"),
        ({"mysql_dsn": f"root:{SECRET}@tcp(h:3306)/"}, "'mysql_dsn': names no database"),
        ({"mysql_dsn": f"mysql://root:{SECRET}@h:99999/d"}, "'mysql_dsn': the port"),
        ({"sqlite_path": "x", "table": "t; DROP TABLE t"}, "'table': not a table name"),
        ({"sqlite_path": "x", "table": "t", "query": "SELECT 1"}, "'table' and 'query'"),
        ({"sqlite_path": "x", "index_columns": [1]}, "'index_columns'"),
        ({"sqlite_path": "x", "index_colums": ["a"]}, "unknown parameter 'index_colums'"),
        (
            {"mysql_dsn": "u:p@tcp(h:3306)/d", "loader": "fork"},
            "parameter 'loader': must be 'process', 'thread' or 'arrow', not 'fork'",
        ),
    ],
)
def test_bad_params_are_config_errors_naming_resource_and_param(
    params: dict[str, Any], fragment: str
) -> None:
    rm = Manager()
    with pytest.raises(ConfigError) as info:
        rm.load_from_root_config(_config(**params))
    message = str(info.value)
    assert "resource 'feed'" in message
    assert fragment in message
    assert SECRET not in message


def test_unknown_index_column_fails_the_load_naming_param_and_column(db: Path) -> None:
    fetcher = resources.FeedDataFetcher({"sqlite_path": str(db), "index_columns": ["nope"]})
    with pytest.raises(ConfigError, match=r"'index_columns': unknown column\(s\) \['nope'\]"):
        fetcher()
    fetcher.close()
    rm = Manager()
    rm.load_from_root_config(_config(sqlite_path=str(db), index_columns=["category", "nope"]))
    with pytest.raises(StartError) as info:
        rm.start()
    assert "'feed'" in str(info.value)
    assert "ConfigError: parameter 'index_columns': unknown column(s) ['nope']" in str(info.value)


def test_factory_does_no_io() -> None:
    # Neither the host nor the file exists; building the fetcher must not notice.
    resources.FeedDataFetcher({"mysql_dsn": "u:p@tcp(no-such-host.invalid:3306)/d"}).close()
    resources.FeedDataFetcher({"sqlite_path": "/no/such/dir/feed.sqlite"}).close()


def test_reload_carry_over_resumes_not_modified_without_reading_the_table(db: Path) -> None:
    config = _config(
        sqlite_path=str(db), version_query="SELECT MAX(updated_at) FROM recommend_feed_item"
    )
    old = Manager()
    old.load_from_root_config(config)
    old.start()
    new = Manager()
    new.load_from_root_config(config, carry_over=old)
    new.start()
    old.stop()
    try:
        assert new.refresh("feed") == "not_modified"  # no full read after the reload
        assert new.status_of("feed").version == 1
        _update(db, "UPDATE recommend_feed_item SET updated_at = 2 WHERE id = 3")
        assert new.refresh("feed") == "swapped"
    finally:
        new.stop()


def test_a_version_carried_over_from_a_shared_snapshot_still_matches(
    db: Path, tmp_path: Path
) -> None:
    """A snapshot keeps the version as JSON (the row's tuple is a list there): a fetcher
    resuming from the mapped table still answers NOT_MODIFIED for the same version."""
    params = {
        "sqlite_path": str(db),
        "version_query": "SELECT MAX(id), 'v' FROM recommend_feed_item",
    }
    fetcher = resources.FeedDataFetcher(params)
    try:
        table = fetcher()
        assert isinstance(table, resources.FeedTable) and isinstance(table.version, tuple)
        resources.lowlevel.write_feed_snapshot(table, tmp_path / "feed")
        mapped = resources.lowlevel.open_mapped_table(tmp_path / "feed")
        assert isinstance(mapped.version, list)
        resumed = resources.FeedDataFetcher(params)
        resumed.carry_over(mapped)
        assert resumed() is NOT_MODIFIED
        mapped.close()
        resumed.close()
    finally:
        fetcher.close()
