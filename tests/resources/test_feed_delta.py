"""``feed_data`` delta reads (``delta_query``) against the machine's MariaDB.

What a delta read serves must be what a full read of the same table serves:
values, positions, index bitmaps, sort ranks, a recall's answer. Its rows come
from the merge (a deleted row stays until the full read ``delta_full_every``
forces), it merges into the table served (a refused value is not the base),
and a bad delta is named and followed by a full read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import resources
from pineapple import ConfigError
from pineapple.resource import NOT_MODIFIED
from resources import SourceError

from .._mariadb import Conn

pytestmark = pytest.mark.mysql

ROWS = 300


@pytest.fixture
def table(mysql_conn: Conn, mysql_table: str) -> str:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, category VARCHAR(16), "
            "tag_ids VARCHAR(64), score DECIMAL(8,4), ratio DOUBLE, at DATETIME, "
            "updated_at BIGINT NOT NULL)"
        )
        rows = [
            (i, ("tech", "film", None)[i % 3], f"[{i % 5}, {i % 7 + 50}]", f"{(i % 97) / 97:.4f}",
             None if i % 4 == 0 else i / 3, "2026-03-04 05:06:07", i)
            for i in range(1, ROWS + 1)
        ]  # fmt: skip
        cur.executemany(f"INSERT INTO `{mysql_table}` VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
    return mysql_table


def _params(dsn: str, table: str, **extra: Any) -> dict[str, Any]:
    return {
        "mysql_dsn": dsn,
        "table": table,
        "index_columns": ["category", "tag_ids"],
        "order_columns": ["score", "ratio"],
        "version_query": f"SELECT MAX(updated_at), COUNT(*) FROM `{table}`",
        "loader": "arrow",
        "connect_timeout_ms": 2000,
        **extra,
    }


def _delta(dsn: str, table: str, **extra: Any) -> resources.FeedDataFetcher:
    return resources.FeedDataFetcher(
        _params(
            dsn,
            table,
            delta_query=f"SELECT * FROM `{table}` WHERE updated_at > %(since)s",
            delta_column="updated_at",
            **extra,
        )
    )


@pytest.fixture
def fetchers(mysql_dsn: str, table: str) -> Iterator[list[resources.FeedDataFetcher]]:
    made: list[resources.FeedDataFetcher] = []
    yield made
    for fetcher in made:
        fetcher.close()


def _rows(table: resources.FeedTable) -> list[list[Any]]:
    return [list(table.column(c)) for c in table.columns]


def _same(got: resources.FeedTable, want: resources.FeedTable) -> None:
    assert got.columns == want.columns and len(got) == len(want)
    assert _rows(got) == _rows(want)
    for column in want.index_columns:
        assert dict(got.index_items(column)) == dict(want.index_items(column)), column
    built = {key: list(rank) for key, rank in want.prepared_ranks().items()}
    assert {key: list(rank) for key, rank in got.prepared_ranks().items()} == built
    assert got.null_ranks() == want.null_ranks()
    assert got.version == want.version
    for match in ({"category": "tech"}, {"tag_ids": 52}, {}):
        for order in ("score", "ratio"):
            assert got.match(match, order_by=order, descending=True) == want.match(
                match, order_by=order, descending=True
            )


def _loaded(fetcher: resources.FeedDataFetcher) -> resources.MappedFeedTable:
    value = fetcher()
    assert isinstance(value, resources.MappedFeedTable)
    return value


_CHANGES = [
    [  # updates (a NULL, a new category, a rank change) and inserts: every column changes
        "UPDATE `{t}` SET score = 0.9999, ratio = NULL, category = 'game', updated_at = 1000"
        " WHERE id IN (3, 150, 299)",
        "UPDATE `{t}` SET tag_ids = '[99]', updated_at = 1001 WHERE id = 7",
        "INSERT INTO `{t}` VALUES (500, 'news', '[1]', 0.1, 2.5, NULL, 1002),"
        " (501, NULL, '[99, 3]', NULL, NULL, '2026-01-01 00:00:00', 1002)",
    ],
    [  # updates only: score and category change, tag_ids and ratio are the table's own
        "UPDATE `{t}` SET score = 0.0001, category = 'auto', updated_at = 1003 WHERE id = 20",
        "UPDATE `{t}` SET updated_at = 1004 WHERE id = 21",  # a row read again, unchanged
    ],
]


def test_a_delta_serves_what_a_full_read_serves(
    mysql_conn: Conn, mysql_dsn: str, table: str, fetchers: list[Any]
) -> None:
    delta = _delta(mysql_dsn, table)
    full = resources.FeedDataFetcher(_params(mysql_dsn, table))
    fetchers.extend([delta, full])
    served = _loaded(delta)
    delta.commit(served)
    for changes in _CHANGES:
        with mysql_conn.cursor() as cur:
            for sql in changes:
                cur.execute(sql.format(t=table))
        merged = _loaded(delta)
        want = _loaded(full)
        _same(merged, want)
        assert len(merged) == ROWS + 2
        delta.commit(merged)
        served.close()
        want.close()
        served = merged
    assert served.column_max("updated_at") == 1004
    assert delta() is NOT_MODIFIED  # the version query's answer did not change: no read
    served.close()


def test_its_rows_come_from_the_merge_until_a_full_read_drops_the_deleted(
    mysql_conn: Conn, mysql_dsn: str, table: str, fetchers: list[Any]
) -> None:
    delta = _delta(mysql_dsn, table, delta_full_every=2)
    fetchers.append(delta)
    served = _loaded(delta)
    delta.commit(served)
    kept = []
    for step in (1, 2):  # two delta reads: the deleted row 10 is still served
        with mysql_conn.cursor() as cur:
            cur.execute(f"DELETE FROM `{table}` WHERE id = 10") if step == 1 else None
            cur.execute(f"UPDATE `{table}` SET updated_at = {1000 + step} WHERE id = {20 + step}")
        served = _loaded(delta)
        delta.commit(served)
        kept.append(served)
        assert 10 in list(served.column("id")) and len(served) == ROWS
    with mysql_conn.cursor() as cur:
        cur.execute(f"UPDATE `{table}` SET updated_at = 2000 WHERE id = 30")
    full = _loaded(delta)  # the third read is full: row 10 is gone
    assert 10 not in list(full.column("id")) and len(full) == ROWS - 1
    for value in (*kept, full):
        value.close()


def test_a_refused_value_is_not_the_base(
    mysql_conn: Conn, mysql_dsn: str, table: str, fetchers: list[Any]
) -> None:
    delta = _delta(mysql_dsn, table)
    fetchers.append(delta)
    served = _loaded(delta)
    delta.commit(served)
    with mysql_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{table}` VALUES (600, 'news', '[1]', 0.1, 2.5, NULL, 1000)")
    refused = _loaded(delta)
    delta.carry_over(served)  # what the Manager does after a refusal
    with mysql_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{table}` VALUES (601, 'news', '[1]', 0.1, 2.5, NULL, 1001)")
    merged = _loaded(delta)  # since: the served table's largest updated_at, so 600 is read again
    ids = list(merged.column("id"))
    assert ids[-2:] == [600, 601] and len(ids) == ROWS + 2
    for value in (served, refused, merged):
        value.close()


def test_a_bad_delta_is_named_and_the_next_read_is_full(
    mysql_conn: Conn, mysql_dsn: str, table: str, fetchers: list[Any]
) -> None:
    delta = resources.FeedDataFetcher(
        _params(
            mysql_dsn,
            table,
            delta_query=f"SELECT id, category, tag_ids, score, ratio, updated_at FROM `{table}`"
            " WHERE updated_at > %(since)s",
            delta_column="updated_at",
        )
    )
    fetchers.append(delta)
    served = _loaded(delta)
    delta.commit(served)
    with mysql_conn.cursor() as cur:
        cur.execute(f"UPDATE `{table}` SET updated_at = 1000 WHERE id = 5")
    with pytest.raises(SourceError, match=r"the table has \[.*'at'"):
        delta()
    full = _loaded(delta)
    assert len(full) == ROWS and full.column_max("updated_at") == 1000
    served.close()
    full.close()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"loader": "process"}, "'delta_query': needs 'loader': 'arrow'"),
        ({"delta_column": None}, "'delta_query' and 'delta_column': give both"),
        ({"delta_query": "SELECT * FROM t"}, r"must hold %\(since\)s"),
        ({"delta_full_every": 0}, "'delta_full_every': must be an integer >= 1"),
    ],
)
def test_bad_delta_params_are_refused(extra: dict[str, Any], message: str) -> None:
    base = {
        "mysql_dsn": "u:p@tcp(127.0.0.1:3306)/test",
        "loader": "arrow",
        "table": "t",
        "delta_query": "SELECT * FROM t WHERE u > %(since)s",
        "delta_column": "u",
    }
    with pytest.raises(ConfigError, match=message):
        resources.FeedDataFetcher({**base, **extra})
