"""Reading a table in a child process, so that parsing rows never holds the server's GIL.

A driver parses every field in Python (pymysql) or builds a Python object per
value (psycopg): reading 200,000 rows is about a second of interpreter time.
In the server process that second competes with the event loop for the GIL
and for a core, however finely it is paced. Here the read runs in a child
process forked from a ``multiprocessing`` forkserver (started once, on first
use; a fork from it costs a few milliseconds and does not copy the server's
threads). The child:

- lowers its own CPU priority (``nice``, default 10), so the kernel runs
  request threads first when cores are short;
- connects through its :class:`LoaderDriver` (MySQL: ``_mysql_loader``,
  PostgreSQL: ``_pg_source``), streams the query, turns each chunk of
  ``FRAME_ROWS`` rows into columns of JSON-ready values (the driver's
  conversions, then the float columns it names, then bytes to base64), and
  sends each chunk as one pickled frame over a pipe;
- exits when done (its memory goes back to the system, not to the server's heap).

The parent only unpickles frames (about 1/20 of the parsing time) and hands
them on as column chunks, pausing between them like any other load.

Frames: ``I`` + the connection's server id (MySQL thread id, PostgreSQL
backend pid; first, once connected), ``H`` + pickled column names, ``C`` +
pickled ``(columns, value_bytes)`` (one per chunk; ``value_bytes`` per column
is what the child measured with ``values_nbytes``, so the server process
never walks the values to size them), ``E`` (end), or ``X`` + error text
(then the child exits). Whatever the child raises (a driver error, a
``ValueError`` from a bad setting, a bug) becomes that final ``X`` frame: its
type and message, the password masked, capped at ``ERROR_CHARS``; the parent
raises it as :class:`SourceError`. A read that timed out says so
(``read_timeout_ms``). A child that dies without one (killed, crashed) is
reported with its exit code or signal. Whenever a read ends before its end
frame (an error, a timeout, the load deadline, a cancel, the consumer
raising), the parent kills the child and then the child's query on the
server (the driver's ``stop_query``: ``KILL QUERY``, ``pg_terminate_backend``),
so no query of a failed load keeps running there.

Guarantees: the child is always reaped: on a normal end, on an error, on a
timeout (killed), when the consumer of the stream raises (killed), and when
the read is cancelled (killed from the cancelling thread through ``Cancel``,
whose action is unregistered before the child is reaped), and when the load
deadline passes (killed from its timer thread, the same way). The
connection parameters, password included, travel to the child over the
forkserver's socket, never in argv or the environment; error texts carry the
driver's message, which never includes the password.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ._cancel import Cancel
from ._deadline import DEFAULT_LOAD_SECONDS, LoadDeadline
from ._errors import ERROR_CHARS, SourceError, capped, error_text
from ._json_values import json_converter
from ._mysql_loader import MYSQL_LOADER
from ._query_kill import kill_tagged_query
from ._value_size import values_nbytes

__all__ = [
    "ERROR_CHARS",
    "FRAME_ROWS",
    "ColumnFrames",
    "LoaderConnection",
    "LoaderDriver",
    "error_text",
    "read_in_child",
]

FRAME_ROWS = 2048
"""Rows per frame: unpickling one takes well under a millisecond in the parent."""


class LoaderConnection(Protocol):
    """One open connection of the loader child."""

    server_id: int
    """What ``stop_query`` stops (MySQL thread id, PostgreSQL backend pid)."""

    def rows(
        self, sql: str
    ) -> AbstractContextManager[tuple[list[str], Callable[[int], Sequence[Any]], Collection[int]]]:
        """Run ``sql``: its column names, ``fetch(n)`` of the next rows (empty at the end)
        and the indexes of the columns to turn into floats; a failed block leaves the
        result undrained."""
        ...


class LoaderDriver(Protocol):
    """What the loader child needs of a database driver (an instance is pickled to it)."""

    stop_name: str
    """How ``stop_query`` stops a query, for messages (``KILL QUERY``)."""

    def connect(self, connect_kwargs: dict[str, Any]) -> AbstractContextManager[LoaderConnection]:
        """A connection, closed (never drained) when the block ends."""
        ...

    def stop_query(self, connect_kwargs: dict[str, Any], server_id: int) -> str | None:
        """Stop ``server_id``'s query from a side connection; None if done, else why not."""
        ...

    def timeout_of(self, exc: BaseException, connect_kwargs: dict[str, Any]) -> str | None:
        """What ``exc`` says when it is the driver's read timeout (else None)."""
        ...


_REAP_SECONDS = 1.0  # bounds the wait for a dead child's exit code

T = TypeVar("T")

_context_lock = threading.Lock()
_context: Any = None


def _forkserver() -> Any:
    """The forkserver context, its preload set once (forks then import nothing)."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["__main__", __name__, "resources._feed_arrow"])
            _context = ctx
        return _context


def _columns(
    rows: Sequence[Sequence[Any]], floats: Collection[int] = ()
) -> tuple[list[list[Any]], list[int]]:
    """The rows as columns of JSON values, and the bytes each column's values hold."""
    columns = [list(values) for values in zip(*rows, strict=True)]
    for i in floats:
        columns[i] = [None if v is None else float(v) for v in columns[i]]
    for i, column in enumerate(columns):
        convert = json_converter(column)
        if convert is not None:
            columns[i] = [None if v is None else convert(v) for v in column]
    return columns, [values_nbytes(column) for column in columns]


def _child(
    out: multiprocessing.connection.Connection,
    driver: LoaderDriver,
    connect_kwargs: dict[str, Any],
    sql: str,
    nice: int,
) -> None:
    """The child's body: stream ``sql`` as column frames into ``out``."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    try:
        # After an error the result may be unread: the driver closes without
        # draining it (the parent stops the query on the server).
        with driver.connect(connect_kwargs) as conn:
            out.send_bytes(b"I%d" % conn.server_id)
            with conn.rows(sql) as (names, fetch, floats):
                out.send_bytes(b"H" + pickle.dumps(names, pickle.HIGHEST_PROTOCOL))
                while rows := fetch(FRAME_ROWS):
                    frame = pickle.dumps(_columns(rows, floats), pickle.HIGHEST_PROTOCOL)
                    out.send_bytes(b"C" + frame)
        out.send_bytes(b"E")
    except Exception as exc:  # whatever it is, the parent reports it (no traceback here)
        password = str(connect_kwargs.get("password") or "")
        text = driver.timeout_of(exc, connect_kwargs) or error_text(exc, (password,))
        with contextlib.suppress(OSError):
            out.send_bytes(b"X" + text.encode())
    finally:
        out.close()


def _exit_reason(child: Any) -> str:
    """Why ``child`` ended, waiting at most ``_REAP_SECONDS`` for it to be gone."""
    child.join(_REAP_SECONDS)
    code = child.exitcode
    if code is None:
        return "closed its pipe"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class ColumnFrames:
    """The parent's end of one read: frames with a deadline per frame; raises SourceError.

    Iterating it yields the column chunks; ``value_bytes`` sums, per column,
    what the child measured of the chunks yielded so far.
    """

    def __init__(
        self,
        inbox: multiprocessing.connection.Connection,
        child: Any,
        where: str,
        timeout: float,
        cancel: Cancel,
        deadline: LoadDeadline,
    ):
        self._inbox = inbox
        self._child = child
        self._where = where
        self._timeout = timeout
        self._cancel = cancel
        self._deadline = deadline
        self.query_tag: str | None = None
        """A text the child's query carries, to kill it by when no thread id came."""
        self.thread_id: int | None = None
        """The child connection's server thread id, once its ``I`` frame came."""
        self.value_bytes: list[int] = []

    def _stopped(self) -> str | None:
        if self._cancel.cancelled:
            return "load cancelled (stopping)"
        if self._deadline.expired:
            return self._deadline.text()
        return None

    def read(self) -> tuple[bytes, bytes]:
        """The next frame other than ``I`` (recording the thread id it carries)."""
        while True:  # bounded: the child sends one I frame, then only others
            kind, body = self._read_one()
            if kind != b"I" or self.thread_id is not None:
                return kind, body
            if not body.isdigit() or len(body) > 20:
                raise SourceError(f"{self._where}: loader process sent a bad thread id")
            self.thread_id = int(body)

    def _read_one(self) -> tuple[bytes, bytes]:
        try:
            if not self._inbox.poll(self._timeout):
                raise SourceError(
                    f"{self._where}: loader process sent nothing for {self._timeout:g}s"
                )
            frame = self._inbox.recv_bytes()
        except (EOFError, OSError):
            stopped = self._stopped()
            if stopped is not None:
                raise SourceError(f"{self._where}: {stopped}") from None
            why = _exit_reason(self._child)
            raise SourceError(
                f"{self._where}: loader process {why} before the end, without an error"
            ) from None
        kind, body = frame[:1], frame[1:]
        if kind == b"X":
            # the child capped and redacted it; cap again: the pipe is not trusted to
            text = capped(body[: 4 * ERROR_CHARS].decode("utf-8", "replace"))
            raise SourceError(f"{self._where}: {text}")
        return kind, body

    def __iter__(self) -> ColumnFrames:
        return self

    def __next__(self) -> list[list[Any]]:
        kind, body = self.read()
        if kind == b"E":
            raise StopIteration
        if kind != b"C":
            raise SourceError(f"{self._where}: loader process sent a bad frame {kind!r}")
        columns, sizes = pickle.loads(body)
        if not self.value_bytes:
            self.value_bytes.extend([0] * len(sizes))
        for i, size in enumerate(sizes):  # bounded: one entry per column
            self.value_bytes[i] += int(size)
        return columns  # type: ignore[no-any-return]


def read_in_child(
    connect_kwargs: dict[str, Any],
    sql: str,
    sink: Callable[[list[str], ColumnFrames], T],
    *,
    where: str,
    timeout: float,
    nice: int = 10,
    cancel: Cancel | None = None,
    deadline: LoadDeadline | None = None,
    driver: LoaderDriver | None = None,
    target: Callable[..., None] | None = None,
    extra: tuple[Any, ...] = (),
    query_tag: str | None = None,
) -> T:
    """Run ``sql`` in a child process; ``sink(names, column_chunks)`` consumes its rows.

    ``target``: another body for the child, ``target(out, connect_kwargs, sql, nice,
    *extra)`` (the Arrow loader's, MySQL); ``query_tag``: a text ``sql`` carries, by
    which its query is found and killed on the server after a failure when the child
    sends no ``I`` frame (``kill_tagged_query``).

    ``timeout`` bounds the wait for each frame (connect, query start, every
    chunk); on expiry the child is killed and SourceError raised. The child's
    own error (any exception) is raised as SourceError with its message.
    ``cancel``: its ``cancel()`` kills the child, so this raises at once;
    ``deadline``: the child is killed when it passes, and this raises saying so.
    After any failure the child's query is stopped on the server. ``driver``:
    the database's (default MySQL, ``_mysql_loader``).
    ``column_chunks.value_bytes`` holds, once it is exhausted, the bytes each
    column's values hold (measured in the child).
    """
    driver = driver if driver is not None else MYSQL_LOADER
    cancel = cancel if cancel is not None else Cancel()
    deadline = deadline if deadline is not None else LoadDeadline(DEFAULT_LOAD_SECONDS)
    ctx = _forkserver()
    inbox, outbox = ctx.Pipe(duplex=False)
    main: Callable[..., None] = _child if target is None else target
    if target is None:
        args: tuple[Any, ...] = (outbox, driver, connect_kwargs, sql, nice)
    else:
        args = (outbox, connect_kwargs, sql, nice, *extra)
    child = ctx.Process(target=main, args=args, name="pineapple-feed-loader")
    try:
        child.start()
    except BaseException:
        inbox.close()
        outbox.close()
        raise
    outbox.close()  # the child holds the only writer: EOF when it dies
    frames = ColumnFrames(inbox, child, where, timeout, cancel, deadline)
    frames.query_tag = query_tag
    failed = True
    try:
        # the kills are unregistered when this block exits, before the child is reaped
        with cancel.on_cancel(child.kill), deadline.on_expiry(child.kill):
            kind, body = frames.read()
            if kind != b"H":
                raise SourceError(f"{where}: loader process sent a bad first frame {kind!r}")
            result = sink(pickle.loads(body), frames)
        failed = False
        return result
    except SourceError as exc:
        raise SourceError(f"{exc}{_stop_query(driver, connect_kwargs, frames, child)}") from None
    finally:
        inbox.close()
        _reap(child)
        if failed:  # a failure other than SourceError (the consumer raised): same clean-up
            _stop_query(driver, connect_kwargs, frames, child)
        child.close()


def _reap(child: Any) -> None:
    """Make sure ``child`` has ended (killed if it still runs) and is joined."""
    if child.is_alive():
        child.join(0.05)
    if child.is_alive():
        child.kill()
    child.join()


def _stop_query(
    driver: LoaderDriver, connect_kwargs: dict[str, Any], frames: ColumnFrames, child: Any
) -> str:
    """Kill the child, then its query on the server (once); '' or why the stop failed."""
    if frames.thread_id is None and frames.query_tag is None:
        return ""
    thread_id, frames.thread_id = frames.thread_id, None
    tag, frames.query_tag = frames.query_tag, None
    _reap(child)  # its socket closes first: the query then has no client to send to
    if thread_id is None:  # the Arrow loader's (MySQL): found by the comment it carries
        assert tag is not None
        why = kill_tagged_query(connect_kwargs, tag)
        if why is None:
            return ""
        return f" (KILL QUERY of {tag!r} failed, the query may still run on the server: {why})"
    why = driver.stop_query(connect_kwargs, thread_id)
    if why is None:
        return ""
    return f" ({driver.stop_name} {thread_id} failed, the query may still run on the server: {why})"
