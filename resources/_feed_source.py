"""Where ``feed_data`` reads rows from: MySQL/MariaDB (pymysql) or SQLite (sqlite3).

A source holds at most one open connection, opened lazily on first use (a
factory never does I/O). Before each use a kept connection is pinged; a dead
one (server restarted, connection killed) is dropped and reopened, so a
refresh after an outage recovers by itself. Any database error drops the
connection and is raised as :class:`SourceError` naming the source without
its password.

Rows are streamed: MySQL through an unbuffered ``SSCursor`` and both through
``fetchmany`` in small chunks (``CHUNK_ROWS``, about a millisecond of parsing
each), so the consumer can pause between them and request threads keep
running while a large table loads on the refresh thread (see ``_pacing``).
By default MySQL rows are read and parsed in a child process instead
(``_feed_worker``), which sends them as column chunks: the server process
then spends about 1/20 of the parsing time on a load. ``in_process=True``
reads on the calling thread (and the version query always does: one row).

``cancel()`` (called on manager stop, before it waits for running fetches)
stops a read in flight from another thread: it kills the loader child, shuts
the in-process connection's socket down (a blocked read fails at once) or
interrupts SQLite; every later read fails at once too. The load's
:class:`~resources._deadline.LoadDeadline` does the same when it passes. A
MySQL read that ends before its query did (a read timeout, the deadline, a
cancel, the consumer raising) drops its connection without draining it and
kills the query on the server (``kill_query``): no retry adds a query to
those still running there.

Guarantees: a source is used by one refresh at a time (the Manager serialises
fetches of a resource); ``_lock`` additionally makes ``close()`` (called on
manager stop) safe against a fetch that is still running. ``cancel()`` takes
no lock of the source (a running read holds ``_lock``): it goes through
``Cancel``, which only touches what a read registered while it runs.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import pymysql
import pymysql.cursors

from ._cancel import Cancel
from ._deadline import DEFAULT_LOAD_SECONDS, LoadDeadline
from ._dsn import MySQLDSN
from ._errors import SourceError, error_text, timeout_text
from ._feed_arrow import read_arrow_snapshot
from ._feed_worker import LoaderDriver, read_in_child
from ._json_values import MYSQL_CONVERSIONS
from ._mapped_table import MappedFeedTable
from ._query_kill import kill_query, query_may_run, read_timed_out, undrained

__all__ = ["CHUNK_ROWS", "ChildReader", "MySQLSource", "RowSource", "SQLiteSource", "Stream"]

CHUNK_ROWS = 256

T = TypeVar("T")


class Stream(NamedTuple):
    """What a source hands to the consumer of one read."""

    names: list[str]
    """Column names, in order."""
    chunks: Iterator[Sequence[Sequence[Any]]]
    """Row chunks (row tuples), or column chunks when ``columnar``."""
    columnar: bool = False
    """Chunks are lists of columns with JSON-ready values (from the loader process)."""
    value_bytes: Sequence[int] | None = None
    """Per column, the bytes its values hold, measured by the loader process (complete
    once ``chunks`` is exhausted); None: the build measures them."""
    float_columns: Sequence[str] = ()
    """Columns whose values the build turns into floats (PostgreSQL ``numeric(p, s)``)."""


class RowSource(Protocol):
    """A database that ``feed_data`` reads from."""

    where: str

    def scalar_row(self, sql: str, deadline: LoadDeadline | None = None) -> tuple[Any, ...] | None:
        """The first row of ``sql`` (for the version query), before ``deadline``."""
        ...

    def read(
        self, sql: str, sink: Callable[[Stream], T], deadline: LoadDeadline | None = None
    ) -> T:
        """Run ``sql`` and hand its streamed rows to ``sink``; returns what ``sink`` returns.

        ``deadline`` (default ``DEFAULT_LOAD_SECONDS`` from now) bounds the whole
        read; past it the read fails with SourceError.
        """
        ...

    def close(self) -> None:
        """Close the connection, if open. Idempotent."""
        ...

    def cancel(self) -> None:
        """Stop the read in flight (from any thread) and fail every later one."""
        ...


def _chunks(fetch: Callable[[int], Sequence[Sequence[Any]]]) -> Iterator[Sequence[Sequence[Any]]]:
    while True:
        chunk = fetch(CHUNK_ROWS)
        if not chunk:
            return
        yield chunk


class ChildReader:
    """A database source whose rows may be read in the loader child (``_feed_worker``):
    :class:`MySQLSource` and ``_pg_source.PostgresSource``, each with its ``_driver``."""

    _driver: LoaderDriver | None = None
    """How the child connects and reads (None: MySQL's, ``_mysql_loader``)."""
    _lock: threading.Lock
    _connect_timeout: float
    _read_timeout: float
    _nice: int
    _cancel: Cancel
    where: str

    def _connect_kwargs(self) -> dict[str, Any]:
        """The driver's connect arguments, here and in the loader child alike."""
        raise NotImplementedError

    def _read_in_child(self, sql: str, sink: Callable[[Stream], T], deadline: LoadDeadline) -> T:
        with self._lock:
            return read_in_child(
                self._connect_kwargs(),
                sql,
                lambda names, chunks: sink(
                    Stream(names, chunks, columnar=True, value_bytes=chunks.value_bytes)
                ),
                where=self.where,
                # a frame is due within the child's own connect and read timeouts
                timeout=self._connect_timeout + self._read_timeout + 5.0,
                nice=self._nice,
                cancel=self._cancel,
                deadline=deadline,
                driver=self._driver,
            )


class MySQLSource(ChildReader):
    """MySQL or MariaDB through pymysql, autocommit (every refresh sees committed data)."""

    _errors = (pymysql.Error, OSError)

    def __init__(
        self,
        dsn: MySQLDSN,
        connect_timeout: float,
        read_timeout: float,
        *,
        in_process: bool = False,
        loader_nice: int = 10,
    ) -> None:
        self._dsn = dsn
        self._connect_timeout = dsn.connect_timeout or connect_timeout
        self._read_timeout = dsn.read_timeout or read_timeout
        self.in_process = in_process
        self._nice = loader_nice
        self._conn: pymysql.connections.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._cancel = Cancel()
        self.where = f"mysql {dsn.where}"

    @property
    def connection_id(self) -> int | None:
        """The server's id of the open connection (``KILL`` target), or None."""
        conn = self._conn
        return conn.thread_id() if conn is not None else None  # type: ignore[no-untyped-call]

    def _connection(self) -> pymysql.connections.Connection[Any]:
        if self._conn is not None:
            try:
                self._conn.ping(reconnect=False)
                return self._conn
            except self._errors:
                self._drop()
        if self._cancel.cancelled:  # the kept connection was shut down by cancel()
            raise pymysql.err.OperationalError(0, "cancelled")
        # Published before it connects, so that cancel() can shut its socket down
        # during the handshake too.
        self._conn = pymysql.connections.Connection(
            **self._connect_kwargs(), autocommit=True, defer_connect=True, conv=MYSQL_CONVERSIONS
        )
        self._conn.connect()
        return self._conn

    def _interrupt(self) -> None:
        """Make a blocked read of the connection fail now (any thread; never blocks)."""
        sock = getattr(self._conn, "_sock", None)
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)

    def _connect_kwargs(self) -> dict[str, Any]:
        """``pymysql.connect`` arguments, here and in the loader process alike."""
        return {
            **self._dsn.connect_kwargs(),
            "connect_timeout": self._connect_timeout,
            "read_timeout": self._read_timeout,
        }

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Already dead: nothing left to release.
            with contextlib.suppress(*self._errors):
                conn.close()

    def _guard(
        self, work: Callable[[pymysql.connections.Connection[Any]], T], deadline: LoadDeadline
    ) -> T:
        with self._lock:
            try:
                with (
                    self._cancel.on_cancel(self._interrupt),
                    deadline.on_expiry(self._interrupt),
                ):
                    return work(self._connection())
            except BaseException as exc:
                note = self._abandon(exc)
                if isinstance(exc, SourceError):
                    if not note:
                        raise
                    raise SourceError(f"{exc}{note}") from None
                if self._cancel.cancelled or deadline.expired or isinstance(exc, self._errors):
                    raise SourceError(
                        f"{self.where}: {self._failure(exc, deadline)}{note}"
                    ) from None
                raise

    def _abandon(self, exc: BaseException) -> str:
        """Drop the connection a read failed on, without draining it, and kill its query.

        '' once done, or why the query could not be killed (for the error message).
        """
        conn = self._conn
        ids = getattr(conn, "server_thread_id", None) if conn is not None else None
        with contextlib.suppress(OSError):
            self._interrupt()  # a half-read result is never drained: close() only writes
        self._drop()
        if not ids or not query_may_run(exc):
            return ""
        why = kill_query(self._connect_kwargs(), int(ids[0]))
        if why is None:
            return ""
        return f" (KILL QUERY {ids[0]} failed, the query may still run on the server: {why})"

    def _failure(self, exc: BaseException, deadline: LoadDeadline) -> str:
        if self._cancel.cancelled:
            return "load cancelled (stopping)"
        if deadline.expired:
            return deadline.text()
        if read_timed_out(exc):
            return timeout_text(self._read_timeout)
        return error_text(exc)

    def scalar_row(self, sql: str, deadline: LoadDeadline | None = None) -> tuple[Any, ...] | None:
        def run(conn: pymysql.connections.Connection[Any]) -> tuple[Any, ...] | None:
            with undrained(conn.cursor()) as cur:
                cur.execute(sql)
                row = cur.fetchone()
            return tuple(row) if row is not None else None

        return self._guard(run, deadline or LoadDeadline(DEFAULT_LOAD_SECONDS))

    def read(
        self, sql: str, sink: Callable[[Stream], T], deadline: LoadDeadline | None = None
    ) -> T:
        deadline = deadline or LoadDeadline(DEFAULT_LOAD_SECONDS)
        if not self.in_process:
            return self._read_in_child(sql, sink, deadline)

        def run(conn: pymysql.connections.Connection[Any]) -> T:
            with undrained(conn.cursor(pymysql.cursors.SSCursor)) as cur:
                cur.execute(sql)
                names = [d[0] for d in cur.description or ()]
                return sink(Stream(names, _chunks(cur.fetchmany)))

        return self._guard(run, deadline)

    def read_snapshot(
        self, sql: str, spec: dict[str, Any], deadline: LoadDeadline | None = None
    ) -> MappedFeedTable:
        """Load ``sql`` with the Arrow loader (``_feed_arrow``); the mapped table.

        ``spec``: ``check`` (called with the column names), ``id_column``,
        ``index_columns``, ``order_columns``, ``version``.
        """
        spec = dict(spec)
        check = spec.pop("check")
        with self._lock:
            return read_arrow_snapshot(
                self._connect_kwargs(),
                sql,
                check=check,
                spec={**spec, "source": self.where},
                where=self.where,
                timeout=self._connect_timeout + self._read_timeout + 5.0,
                nice=self._nice,
                cancel=self._cancel,
                deadline=deadline or LoadDeadline(DEFAULT_LOAD_SECONDS),
            )

    def close(self) -> None:
        with self._lock:
            self._drop()

    def cancel(self) -> None:
        self._cancel.cancel()


class SQLiteSource:
    """A SQLite file, opened read-only."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._cancel = Cancel()
        self.where = f"sqlite {path}"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            # check_same_thread=False: successive refreshes run on different
            # pool threads, never two at once (see the module's guarantees).
            self._conn = sqlite3.connect(
                f"file:{self._path}?mode=ro", uri=True, check_same_thread=False
            )
        return self._conn

    def _guard(self, work: Callable[[sqlite3.Connection], T], deadline: LoadDeadline) -> T:
        with self._lock:
            try:
                conn = self._connection()
                with self._cancel.on_cancel(conn.interrupt), deadline.on_expiry(conn.interrupt):
                    return work(conn)
            except sqlite3.Error as exc:
                self._drop()
                if self._cancel.cancelled:
                    raise SourceError(f"{self.where}: load cancelled (stopping)") from None
                if deadline.expired:
                    raise SourceError(f"{self.where}: {deadline.text()}") from None
                raise SourceError(f"{self.where}: {error_text(exc)}") from None

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def scalar_row(self, sql: str, deadline: LoadDeadline | None = None) -> tuple[Any, ...] | None:
        def run(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row = conn.execute(sql).fetchone()
            return tuple(row) if row is not None else None

        return self._guard(run, deadline or LoadDeadline(DEFAULT_LOAD_SECONDS))

    def read(
        self, sql: str, sink: Callable[[Stream], T], deadline: LoadDeadline | None = None
    ) -> T:
        def run(conn: sqlite3.Connection) -> T:
            cur = conn.execute(sql)
            try:
                names = [d[0] for d in cur.description or ()]
                return sink(Stream(names, _chunks(cur.fetchmany)))
            finally:
                cur.close()

        return self._guard(run, deadline or LoadDeadline(DEFAULT_LOAD_SECONDS))

    def close(self) -> None:
        with self._lock:
            self._drop()

    def cancel(self) -> None:
        self._cancel.cancel()
