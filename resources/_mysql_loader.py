"""The MySQL side of the loader child (``_feed_worker``): pymysql, ``SSCursor``, ``KILL QUERY``.

The child connects with the resource's settings and ``MYSQL_CONVERSIONS``,
streams the query through an unbuffered ``SSCursor`` and, after a failure,
closes the connection without draining its result (``undrained``); the
parent then kills the query from a side connection (``kill_query``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import pymysql
import pymysql.cursors

from ._errors import timeout_text
from ._json_values import MYSQL_CONVERSIONS
from ._query_kill import kill_query, read_timed_out, undrained

__all__ = ["MYSQL_LOADER", "MySQLLoader"]


class _Connection:
    def __init__(self, conn: pymysql.connections.Connection[Any]) -> None:
        self._conn = conn
        self.server_id: int = conn.thread_id()  # type: ignore[no-untyped-call]

    @contextlib.contextmanager
    def rows(
        self, sql: str
    ) -> Iterator[tuple[list[str], Callable[[int], Sequence[Any]], Collection[int]]]:
        with undrained(self._conn.cursor(pymysql.cursors.SSCursor)) as cur:
            cur.execute(sql)
            names = [d[0] for d in cur.description or ()]
            yield names, cur.fetchmany, ()  # DECIMAL is a float already (MYSQL_CONVERSIONS)


class MySQLLoader:
    """A :class:`~resources._feed_worker.LoaderDriver` for MySQL and MariaDB."""

    stop_name = "KILL QUERY"

    @contextlib.contextmanager
    def connect(self, connect_kwargs: dict[str, Any]) -> Iterator[_Connection]:
        conn = pymysql.connect(**connect_kwargs, autocommit=True, conv=MYSQL_CONVERSIONS)
        try:
            yield _Connection(conn)
        finally:
            # After an error the result may be unread: close without draining it.
            with contextlib.suppress(pymysql.Error, OSError):
                conn.close()

    def stop_query(self, connect_kwargs: dict[str, Any], server_id: int) -> str | None:
        return kill_query(connect_kwargs, server_id)

    def timeout_of(self, exc: BaseException, connect_kwargs: dict[str, Any]) -> str | None:
        if read_timed_out(exc):
            return timeout_text(float(connect_kwargs.get("read_timeout") or 0))
        return None


MYSQL_LOADER = MySQLLoader()
