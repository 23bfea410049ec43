"""``kill_query``: stop a query on the MySQL server from a side connection.

Closing a client socket does not stop its query: MariaDB runs a ``SLEEP`` or
a long scan to its end, and a retry would start one more. So whenever a
``feed_data`` read ends before its query did (a read timeout, the load
deadline, a cancel on stop, the consumer of the rows raising), the loader
sends ``KILL QUERY <thread id>`` on a new connection with the same
credentials (a user may kill its own queries without any privilege).

Bounded: the side connection connects and reads within ``KILL_SECONDS``
(capped by the resource's connect timeout). A thread that is already gone
(``Unknown thread id``) counts as killed. Errors name the thread, never the
password (it is masked).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import pymysql
import pymysql.cursors

from pineapple.resource.lowlevel import redact

__all__ = [
    "KILL_SECONDS",
    "kill_query",
    "kill_tagged_query",
    "query_may_run",
    "read_timed_out",
    "undrained",
]

KILL_SECONDS = 2.0
"""Longest wait of the side connection, to connect and to run the ``KILL``."""

C = TypeVar("C", bound=pymysql.cursors.Cursor)

_UNKNOWN_THREAD = 1094
_FIRST_CLIENT_ERROR = 2000  # MySQL client-side error codes (CR_*) start here


@contextlib.contextmanager
def undrained(cursor: C) -> Iterator[C]:
    """``cursor`` for the block; closed after it, unless it raised.

    After a failure the cursor is detached from its connection instead:
    closing an unbuffered cursor reads the rest of its result, which after a
    timeout fails (``'NoneType' object has no attribute 'read'``) and
    otherwise reads up to the whole table. The connection is dropped and its
    query killed instead.
    """
    try:
        yield cursor
    except BaseException:
        # pymysql drains an unbuffered result when the cursor or the result is
        # collected too: mark it finished (its connection is dropped anyway).
        result = getattr(cursor, "_result", None)
        if result is not None:
            result.unbuffered_active = False
        cursor.connection = None  # type: ignore[assignment]
        raise
    cursor.close()


def read_timed_out(exc: BaseException) -> bool:
    """True when ``exc`` is pymysql's "lost connection" after its read timeout expired."""
    return isinstance(exc, pymysql.err.OperationalError) and isinstance(
        exc.__context__, TimeoutError
    )


def query_may_run(exc: BaseException) -> bool:
    """False when the server itself reported ``exc`` (its query has ended), else True."""
    if isinstance(exc, pymysql.err.MySQLError) and exc.args:
        code = exc.args[0]
        return not (isinstance(code, int) and 0 < code < _FIRST_CLIENT_ERROR)
    return True


def _why(exc: BaseException, connect_kwargs: dict[str, Any]) -> str:
    password = str(connect_kwargs.get("password") or "")
    return redact(f"{type(exc).__name__}: {exc}", (password,))[:500]


def _side_connection(connect_kwargs: dict[str, Any]) -> pymysql.connections.Connection[Any] | str:
    """A connection beside the loader's, every step bounded by ``KILL_SECONDS``; or why not."""
    timeout = min(KILL_SECONDS, float(connect_kwargs.get("connect_timeout") or KILL_SECONDS))
    kwargs = {
        **connect_kwargs,
        "connect_timeout": timeout,
        "read_timeout": KILL_SECONDS,
        "write_timeout": KILL_SECONDS,
    }
    try:
        return pymysql.connect(**kwargs, autocommit=True)
    except (pymysql.Error, OSError, ValueError) as exc:
        return _why(exc, connect_kwargs)


def kill_query(connect_kwargs: dict[str, Any], thread_id: int) -> str | None:
    """``KILL QUERY thread_id`` on a side connection; None if done, else why not."""
    conn = _side_connection(connect_kwargs)
    if isinstance(conn, str):
        return conn
    try:
        with conn.cursor() as cur:
            cur.execute(f"KILL QUERY {int(thread_id)}")
    except pymysql.err.MySQLError as exc:
        if exc.args and exc.args[0] == _UNKNOWN_THREAD:
            return None
        return _why(exc, connect_kwargs)
    except OSError as exc:
        return _why(exc, connect_kwargs)
    finally:
        with contextlib.suppress(pymysql.Error, OSError):
            conn.close()
    return None


def kill_tagged_query(connect_kwargs: dict[str, Any], tag: str) -> str | None:
    """``KILL QUERY`` every server thread whose statement holds ``tag`` (a comment a loader
    put in its query), found in ``information_schema.PROCESSLIST`` on a side connection;
    None if done (or none runs), else why not."""
    conn = _side_connection(connect_kwargs)
    if isinstance(conn, str):
        return conn
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT ID FROM information_schema.PROCESSLIST"
                " WHERE INFO LIKE %s AND ID <> CONNECTION_ID()",
                ("%" + tag.replace("%", r"\%").replace("_", r"\_") + "%",),
            )
            ids = [int(row[0]) for row in cur.fetchall()]
            for thread_id in ids:  # bounded: the threads running this one load's query
                try:
                    cur.execute(f"KILL QUERY {thread_id}")
                except pymysql.err.MySQLError as exc:
                    if not exc.args or exc.args[0] != _UNKNOWN_THREAD:
                        raise
    except (pymysql.err.MySQLError, OSError) as exc:
        return _why(exc, connect_kwargs)
    finally:
        with contextlib.suppress(pymysql.Error, OSError):
            conn.close()
    return None
