"""A scratch ``feed_data`` table in the machine's MariaDB (database ``test``), built and dropped.

Rows look like a production item table: an id, a category and a status (low
cardinality, indexed), a JSON-array tag list (indexed per element), a
DECIMAL score, a title and an update time. The table is filled with a few
``INSERT ... SELECT`` doublings, so building 200,000 rows takes a second or two.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql

__all__ = [
    "INDEX_COLUMNS",
    "MYSQL",
    "USERSTAT_LOCK",
    "dsn",
    "feed_params",
    "feed_table",
    "rows_read",
    "unreachable",
    "userstat_on",
]

MYSQL: dict[str, Any] = {
    "host": os.environ.get("PINE_BENCH_MYSQL_HOST", "127.0.0.1"),
    "port": int(os.environ.get("PINE_BENCH_MYSQL_PORT", "3306")),
    "user": "root",
    "password": "",
    "database": "test",
}

INDEX_COLUMNS = ["category", "status", "tag_ids"]


def dsn() -> str:
    """The Go-style DSN of :data:`MYSQL` (what a config file would carry)."""
    m = MYSQL
    return f"{m['user']}:{m['password']}@tcp({m['host']}:{m['port']})/{m['database']}"


def connect(**extra: Any) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(**MYSQL, autocommit=True, connect_timeout=2, **extra)


def unreachable() -> str | None:
    """None when MariaDB answers, else the reason (printed in the ``n/a`` row)."""
    try:
        connect().close()
    except Exception as exc:  # any failure means: cannot measure here
        return f"MariaDB {MYSQL['host']}:{MYSQL['port']} unreachable: {type(exc).__name__}"
    return None


def feed_params(table: str, **extra: Any) -> dict[str, Any]:
    """``feed_data`` params for ``table``, indices as a production table would have."""
    return {
        "mysql_dsn": dsn(),
        "table": table,
        "id_column": "id",
        "index_columns": list(INDEX_COLUMNS),
        **extra,
    }


@contextmanager
def feed_table(rows: int, tag: str = "") -> Iterator[str]:
    """Create and fill ``bench_feed_<pid><tag>_<rows>``; dropped on exit."""
    name = f"bench_feed_{os.getpid()}{tag}_{rows}"
    conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`")
            cur.execute(
                f"CREATE TABLE `{name}` (id BIGINT PRIMARY KEY, category VARCHAR(16) NOT NULL, "
                "status VARCHAR(8) NOT NULL, tag_ids VARCHAR(32) NOT NULL, "
                "score DECIMAL(8,4) NOT NULL, title VARCHAR(64) NOT NULL, "
                "updated_at BIGINT NOT NULL)"
            )
            cur.execute(
                f"INSERT INTO `{name}` VALUES (1, 'news', 'online', '[1, 2]', 0.5, 'item 1', 1)"
            )
            have = 1
            while have < rows:
                take = min(have, rows - have)
                cur.execute(
                    f"INSERT INTO `{name}` SELECT id + {have}, "
                    "ELT(1 + (id + %s) %% 8, 'news', 'sport', 'tech', 'music', 'film', "
                    "'food', 'auto', 'game'), "
                    "IF((id + %s) %% 10 = 0, 'offline', 'online'), "
                    "CONCAT('[', (id + %s) %% 50, ', ', (id + %s) %% 37 + 50, ']'), "
                    "((id + %s) %% 10000) / 10000, CONCAT('item ', id + %s), id + %s "
                    f"FROM `{name}` ORDER BY id LIMIT {take}",
                    (have,) * 7,
                )
                have += take
        yield name
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`")
        conn.close()


USERSTAT_LOCK = "pineapple.userstat"
"""The MariaDB named lock held by every :func:`userstat_on` block (one at a time)."""


@contextmanager
def userstat_on(conn: Any, wait_seconds: float = 300.0) -> Iterator[None]:
    """MariaDB's ``userstat`` on while the block runs (the global setting restored after):
    ``information_schema.TABLE_STATISTICS`` counts the rows read per table.

    The setting is global, so blocks of other connections and processes (a
    test on another xdist worker, a benchmark) would restore it under each
    other: each block holds the named lock :data:`USERSTAT_LOCK` on ``conn``,
    waiting at most ``wait_seconds`` for it (then a ``TimeoutError``).
    """
    with conn.cursor() as cur:
        cur.execute("SELECT GET_LOCK(%s, %s)", (USERSTAT_LOCK, wait_seconds))
        got = cur.fetchone()
    if not got or got[0] != 1:
        raise TimeoutError(f"MariaDB lock {USERSTAT_LOCK!r} still held after {wait_seconds:g} s")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@global.userstat")
            row = cur.fetchone()
            before = int(row[0]) if row else 0
            cur.execute("SET GLOBAL userstat = 1")
        try:
            yield
        finally:
            with conn.cursor() as cur:
                cur.execute(f"SET GLOBAL userstat = {before}")
    finally:
        with conn.cursor() as cur:
            cur.execute("SELECT RELEASE_LOCK(%s)", (USERSTAT_LOCK,))


def rows_read(conn: Any, table: str) -> int:
    """MariaDB's own count of the rows read from ``table`` (of the connection's database)
    while ``userstat`` was on: ``ROWS_READ / rows`` is the number of full reads."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT ROWS_READ FROM information_schema.TABLE_STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
        row = cur.fetchone()
    return int(row[0]) if row else 0
