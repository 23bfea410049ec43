"""What the MariaDB tests share: a reader account with a password, and running statements."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any, TypeAlias

import pymysql

__all__ = ["Conn", "reader_account", "running", "waiting_for_lock"]

Conn: TypeAlias = "pymysql.connections.Connection[Any]"


@contextlib.contextmanager
def reader_account(conn: Conn, database: str, password: str, prefix: str) -> Iterator[str]:
    """A new user ``<prefix>_<hex>`` with ``password`` that may read ``database``; dropped after."""
    user = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with conn.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
        cur.execute(f"GRANT SELECT ON `{database}`.* TO '{user}'@'%'")
    try:
        yield user
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def running(conn: Conn, marker: str) -> int:
    """How many statements carrying ``marker`` run on the server (this look-up excluded)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE INFO LIKE %s AND ID <> CONNECTION_ID()",
            (f"%{marker}%",),
        )
        row = cur.fetchone()
    assert row is not None
    return int(row[0])


def waiting_for_lock(conn: Conn, table: str) -> bool:
    """Whether a query on ``table`` waits for its table lock (a loader's read)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE INFO LIKE %s AND STATE LIKE %s",
            (f"%{table}%", "Waiting for table%"),
        )
        row = cur.fetchone()
    assert row is not None
    return bool(row[0])
