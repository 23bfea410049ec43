"""``feed_data`` from PostgreSQL (psycopg 3): ``PostgresSource`` and the loader child's driver.

Like ``MySQLSource`` (see ``_feed_source``): at most one open connection,
opened lazily, autocommit, checked with ``SELECT 1`` before each use and
reopened when dead; any database error drops it and is raised as
:class:`SourceError` naming ``user@host:port/db``, never the password. Rows
are streamed (libpq's chunked rows mode, ``CHUNK_ROWS`` a chunk) and decoded
by ``PG_ADAPTERS`` (``_pg_values``). By default (``loader: process``) the
rows are read and decoded in the loader child (``_feed_worker``, through
:data:`POSTGRES_LOADER`); ``in_process=True`` reads on the calling thread
(and the version query always does).

Bounds: psycopg has no read timeout, so every read runs under a
:class:`~resources._read_watch.ReadWatch`: no rows for ``read_timeout``
seconds shut the connection's socket down and the read fails with ``query
timed out``. The connect is bounded by ``connect_timeout`` (libpq's, whole
seconds, at least 2). The session's ``statement_timeout`` is the load's
bound plus ``STOP_SECONDS``, so the server ends a query of a load even if
every stop below failed.

Stopping the query: closing a socket does not stop PostgreSQL's query (the
backend notices only when it next writes), so a read that ends before its
query did (read timeout, load deadline, cancel on stop, the consumer
raising) shuts the socket down, drops the connection undrained and ends its
backend with ``pg_terminate_backend(pid)`` on a side connection with the
same credentials (:func:`stop_backend`; a role may signal its own backends,
and only a backend of that same role is touched); the loader child's parent
does the same with the pid the child announced. Terminate, not
``pg_cancel_backend``: a cancel that reaches the backend before it has read
the query (a loader child killed right after sending it) cancels nothing,
and the query then runs to its end; the session is abandoned anyway. The
backend leaves ``pg_stat_activity`` at once.

Guarantees: as ``MySQLSource``: one refresh at a time; ``_lock`` makes
``close()`` safe against a running fetch; ``cancel()`` takes no lock of the
source (it goes through ``Cancel``).
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar

import psycopg

from pineapple.resource.lowlevel import redact

from ._cancel import Cancel
from ._deadline import DEFAULT_LOAD_SECONDS, LoadDeadline
from ._errors import SourceError, error_text, timeout_text
from ._feed_source import CHUNK_ROWS, ChildReader, Stream
from ._feed_worker import FRAME_ROWS
from ._pg_dsn import PostgresDSN
from ._pg_values import PG_ADAPTERS, SESSION_OPTIONS, float_columns
from ._read_watch import ReadWatch

__all__ = [
    "POSTGRES_LOADER",
    "STOP_SECONDS",
    "PostgresLoader",
    "PostgresSource",
    "stop_backend",
]

STOP_SECONDS = 2.0
"""Longest wait of the side connection that stops a backend (connect, then the call)."""

_READ_TIMEOUT = "read_timeout"
"""The key of the read timeout among the connect settings (not a libpq keyword)."""

T = TypeVar("T")


def _libpq(connect_kwargs: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The libpq keywords of ``connect_kwargs`` and its read timeout (seconds)."""
    libpq = dict(connect_kwargs)
    return libpq, float(libpq.pop(_READ_TIMEOUT))


def _open(libpq: dict[str, Any]) -> psycopg.Connection[Any]:
    return psycopg.connect(**libpq, autocommit=True, prepare_threshold=None, context=PG_ADAPTERS)


def _shut(conn: psycopg.Connection[Any] | None) -> None:
    """Make a blocked read of ``conn`` fail now (any thread; never blocks)."""
    if conn is None:
        return
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:  # closed already: nothing blocks on it
        return
    sock = socket.socket(fileno=os.dup(fd))
    try:
        sock.shutdown(socket.SHUT_RDWR)
    finally:
        sock.close()


def query_may_run(exc: BaseException) -> bool:
    """False when the server itself reported ``exc`` (its query has ended), else True."""
    return not (isinstance(exc, psycopg.Error) and exc.sqlstate is not None)


def _why(exc: BaseException, password: str) -> str:
    return redact(f"{type(exc).__name__}: {exc}", (password,))[:500]


def stop_backend(connect_kwargs: dict[str, Any], pid: int) -> str | None:
    """``pg_terminate_backend(pid)`` on a side connection, if ``pid`` is a backend of the
    same role; None if done (or gone), else why not."""
    libpq, _ = _libpq(connect_kwargs)
    password = str(libpq.get("password") or "")
    libpq["connect_timeout"] = min(int(libpq.get("connect_timeout") or 2), 2)
    libpq["options"] = f"{libpq.get('options', '')} -c statement_timeout={int(STOP_SECONDS * 1000)}"
    try:
        conn = _open(libpq)
    except (psycopg.Error, OSError) as exc:
        return _why(exc, password)
    watch = ReadWatch(STOP_SECONDS)
    try:
        with watch.watching(lambda: _shut(conn)):
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid = %s AND usename = current_user",
                (int(pid),),
            )
    except (psycopg.Error, OSError) as exc:
        return "no answer within 2s" if watch.fired else _why(exc, password)
    finally:
        with contextlib.suppress(psycopg.Error, OSError):
            conn.close()
    return None  # no such backend (any more) counts as done


class _Rows:
    """One streamed query: its names, float columns and ``fetch(n)`` of the next rows."""

    def __init__(self, conn: psycopg.Connection[Any], sql: str, watch: ReadWatch, chunk: int):
        self._conn = conn
        self._watch = watch
        self._cursor = conn.cursor()
        self._stream = self._cursor.stream(sql, size=chunk)
        self._head = list(islice(self._stream, 1))  # the first row: the columns are known
        watch.beat()
        pgresult = self._cursor.pgresult
        if not self._head:  # no row: the stream kept no result; the server describes it
            pgresult = _described(conn, sql)
        self.names, self.floats = _columns(pgresult)

    def fetch(self, n: int) -> list[Any]:
        rows, self._head = self._head, []
        rows.extend(islice(self._stream, n - len(rows)))
        self._watch.beat()
        return rows

    def close(self, failed: bool) -> None:
        """End the stream; after a failure, the socket first (so nothing is drained)."""
        if failed:
            _shut(self._conn)
        with contextlib.suppress(psycopg.Error, OSError):
            self._stream.close()  # type: ignore[attr-defined]
        with contextlib.suppress(psycopg.Error, OSError):
            self._cursor.close()


def _columns(pgresult: Any) -> tuple[list[str], list[int]]:
    """The column names of a result and the indexes of its float columns."""
    if pgresult is None:
        return [], []
    fields = range(pgresult.nfields)
    names = [bytes(pgresult.fname(i) or b"").decode() for i in fields]
    return names, float_columns([(pgresult.ftype(i), pgresult.fmod(i)) for i in fields])


def _described(conn: psycopg.Connection[Any], sql: str) -> Any:
    """The server's description of ``sql``'s columns (an unnamed statement, not run)."""
    prepared = conn.pgconn.prepare(b"", sql.encode())
    if prepared.status != psycopg.pq.ExecStatus.COMMAND_OK:
        raise psycopg.OperationalError(prepared.get_error_message())
    return conn.pgconn.describe_prepared(b"")


@contextlib.contextmanager
def _streamed(
    conn: psycopg.Connection[Any], sql: str, watch: ReadWatch, chunk: int
) -> Iterator[_Rows]:
    rows: _Rows | None = None
    try:
        rows = _Rows(conn, sql, watch, chunk)
        yield rows
    except BaseException:
        if rows is not None:
            rows.close(failed=True)
        else:
            _shut(conn)
        raise
    rows.close(failed=False)


class _ChildConnection:
    """The loader child's connection (a ``LoaderConnection``)."""

    def __init__(self, conn: psycopg.Connection[Any], read_timeout: float) -> None:
        self._conn = conn
        self._watch = ReadWatch(read_timeout)
        self.server_id: int = conn.info.backend_pid

    @contextlib.contextmanager
    def rows(
        self, sql: str
    ) -> Iterator[tuple[list[str], Callable[[int], Sequence[Any]], Collection[int]]]:
        with (
            self._watch.watching(lambda: _shut(self._conn)),
            _streamed(self._conn, sql, self._watch, FRAME_ROWS) as rows,
        ):
            yield rows.names, rows.fetch, rows.floats

    @property
    def timed_out(self) -> bool:
        return self._watch.fired


class _ReadTimedOut(Exception):
    """The loader child's read heard nothing for ``read_timeout`` seconds."""


class PostgresLoader:
    """A :class:`~resources._feed_worker.LoaderDriver` for PostgreSQL."""

    stop_name = "pg_terminate_backend"

    @contextlib.contextmanager
    def connect(self, connect_kwargs: dict[str, Any]) -> Iterator[_ChildConnection]:
        libpq, read_timeout = _libpq(connect_kwargs)
        conn = _open(libpq)
        child = _ChildConnection(conn, read_timeout)
        try:
            yield child
        except BaseException as exc:
            if child.timed_out:
                raise _ReadTimedOut() from exc
            raise
        finally:
            with contextlib.suppress(psycopg.Error, OSError):
                conn.close()

    def stop_query(self, connect_kwargs: dict[str, Any], server_id: int) -> str | None:
        return stop_backend(connect_kwargs, server_id)

    def timeout_of(self, exc: BaseException, connect_kwargs: dict[str, Any]) -> str | None:
        if isinstance(exc, _ReadTimedOut):
            return timeout_text(float(connect_kwargs[_READ_TIMEOUT]))
        return None


POSTGRES_LOADER = PostgresLoader()


class PostgresSource(ChildReader):
    """PostgreSQL through psycopg 3, autocommit (every refresh sees committed data)."""

    _errors = (psycopg.Error, OSError)
    _driver = POSTGRES_LOADER

    def __init__(
        self,
        dsn: PostgresDSN,
        connect_timeout: float,
        read_timeout: float,
        *,
        load_timeout: float = DEFAULT_LOAD_SECONDS,
        in_process: bool = False,
        loader_nice: int = 10,
    ) -> None:
        self._dsn = dsn
        self._connect_timeout = dsn.connect_timeout or connect_timeout
        self._read_timeout = dsn.read_timeout or read_timeout
        self._load_timeout = load_timeout
        self.in_process = in_process
        self._nice = loader_nice
        self._conn: psycopg.Connection[Any] | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._cancel = Cancel()
        self.where = f"postgresql {dsn.where}"

    @property
    def backend_pid(self) -> int | None:
        """The server's pid of the open connection (``pg_terminate_backend`` target), or None."""
        return self._pid if self._conn is not None else None

    def _connect_kwargs(self) -> dict[str, Any]:
        """libpq keywords plus the read timeout, here and in the loader process alike."""
        kwargs = self._dsn.connect_kwargs()
        statement_ms = int((self._load_timeout + STOP_SECONDS) * 1000)
        kwargs["options"] = " ".join(
            part
            for part in (
                kwargs.get("options", ""),
                SESSION_OPTIONS,
                f"-c statement_timeout={statement_ms}",
            )
            if part
        )
        kwargs["connect_timeout"] = max(2, math.ceil(self._connect_timeout))
        kwargs[_READ_TIMEOUT] = self._read_timeout
        return kwargs

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is not None:
            try:
                with ReadWatch(self._read_timeout).watching(self._interrupt):
                    self._conn.execute("SELECT 1")  # a dead one is dropped and reopened
                return self._conn
            except self._errors:
                self._drop()
        if self._cancel.cancelled:
            raise psycopg.OperationalError("cancelled")
        libpq, _ = _libpq(self._connect_kwargs())
        self._conn = _open(libpq)
        self._pid = self._conn.info.backend_pid
        return self._conn

    def _interrupt(self) -> None:
        _shut(self._conn)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(*self._errors):
                conn.close()

    def _guard(
        self,
        work: Callable[[psycopg.Connection[Any], ReadWatch], T],
        deadline: LoadDeadline,
    ) -> T:
        with self._lock:
            watch = ReadWatch(self._read_timeout)
            try:
                with (
                    self._cancel.on_cancel(self._interrupt),
                    deadline.on_expiry(self._interrupt),
                ):
                    conn = self._connection()  # bounded: connect_timeout, the ping's watch
                    with watch.watching(self._interrupt):
                        return work(conn, watch)
            except BaseException as exc:
                note = self._abandon(exc)
                if isinstance(exc, SourceError):
                    if not note:
                        raise
                    raise SourceError(f"{exc}{note}") from None
                stopped = self._cancel.cancelled or deadline.expired or watch.fired
                if stopped or isinstance(exc, self._errors):
                    raise SourceError(
                        f"{self.where}: {self._failure(exc, deadline, watch)}{note}"
                    ) from None
                raise

    def _abandon(self, exc: BaseException) -> str:
        """Drop the connection a read failed on, undrained, and end its backend.

        '' once done, or why the backend could not be ended (for the error message).
        """
        pid = self._pid if self._conn is not None else None
        with contextlib.suppress(OSError):
            self._interrupt()
        self._drop()
        if not pid or not query_may_run(exc):
            return ""
        why = stop_backend(self._connect_kwargs(), pid)
        if why is None:
            return ""
        return f" (pg_terminate_backend {pid} failed, the query may still run on the server: {why})"

    def _failure(self, exc: BaseException, deadline: LoadDeadline, watch: ReadWatch) -> str:
        if self._cancel.cancelled:
            return "load cancelled (stopping)"
        if deadline.expired:
            return deadline.text()
        if watch.fired:
            return timeout_text(self._read_timeout)
        return error_text(exc, (self._dsn.password,))

    def scalar_row(self, sql: str, deadline: LoadDeadline | None = None) -> tuple[Any, ...] | None:
        def run(conn: psycopg.Connection[Any], watch: ReadWatch) -> tuple[Any, ...] | None:
            with conn.cursor() as cur:
                cur.execute(sql)
                row = cur.fetchone() if cur.description else None
            return tuple(row) if row is not None else None

        return self._guard(run, deadline or LoadDeadline(DEFAULT_LOAD_SECONDS))

    def read(
        self, sql: str, sink: Callable[[Stream], T], deadline: LoadDeadline | None = None
    ) -> T:
        deadline = deadline or LoadDeadline(DEFAULT_LOAD_SECONDS)
        if not self.in_process:
            return self._read_in_child(sql, sink, deadline)

        def run(conn: psycopg.Connection[Any], watch: ReadWatch) -> T:
            with _streamed(conn, sql, watch, CHUNK_ROWS) as rows:
                names = rows.names
                float_names = [names[i] for i in rows.floats]
                return sink(Stream(names, _chunks(rows.fetch), float_columns=float_names))

        return self._guard(run, deadline)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def cancel(self) -> None:
        self._cancel.cancel()


def _chunks(fetch: Callable[[int], Sequence[Any]]) -> Iterator[Sequence[Any]]:
    while chunk := fetch(CHUNK_ROWS):  # bounded: the query's rows
        yield chunk
