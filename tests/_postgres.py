"""What the PostgreSQL tests share: a reader role with a password, and running statements."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any, TypeAlias

import psycopg

__all__ = ["Conn", "gone_within", "reader_role", "running"]

Conn: TypeAlias = "psycopg.Connection[Any]"


@contextlib.contextmanager
def reader_role(conn: Conn, table: str, password: str, prefix: str) -> Iterator[str]:
    """A new role ``<prefix>_<hex>`` with ``password`` that may read ``table``; dropped after."""
    role = f"{prefix}_{uuid.uuid4().hex[:8]}"
    conn.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
    conn.execute(f'GRANT SELECT ON "{table}" TO "{role}"')
    try:
        yield role
    finally:
        conn.execute(f'REVOKE ALL ON "{table}" FROM "{role}"')
        # its backends first: a role with sessions cannot be dropped
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def running(conn: Conn, marker: str, *, active: bool = False) -> int:
    """How many backends hold a statement carrying ``marker`` (this look-up excluded).

    Counts every backend whose last statement carries the marker, idle ones
    too (a backend that ran the marked query and still exists has not gone);
    with ``active``, only those running it now.
    """
    state = " AND state = 'active'" if active else ""
    row = conn.execute(
        "SELECT COUNT(*) FROM pg_stat_activity "
        f"WHERE query LIKE %s AND pid <> pg_backend_pid(){state}",
        (f"%{marker}%",),
    ).fetchone()
    assert row is not None
    return int(row[0])


def gone_within(conn: Conn, marker: str, seconds: float) -> bool:
    """Whether every backend of ``marker`` leaves ``pg_stat_activity`` within ``seconds``."""
    end = time.monotonic() + seconds
    while running(conn, marker):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)  # polling the server's view of other sessions, with a deadline
    return True
