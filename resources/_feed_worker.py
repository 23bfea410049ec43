"""Reading a MySQL table in a child process, so that parsing rows never holds the server's GIL.

pymysql parses every field in Python: reading 200,000 rows is about a second
of interpreter time. In the server process that second competes with the
event loop for the GIL and for a core, however finely it is paced. Here the
read runs in a child process forked from a ``multiprocessing`` forkserver
(started once, on first use; a fork from it costs a few milliseconds and
does not copy the server's threads). The child:

- lowers its own CPU priority (``nice``, default 10), so the kernel runs
  request threads first when cores are short;
- connects, streams the query through an unbuffered ``SSCursor``, turns each
  chunk of ``FRAME_ROWS`` rows into columns of JSON-ready values (DECIMAL to
  float, temporal values to ISO 8601 text, bytes to text), and sends each
  chunk as one pickled frame over a pipe;
- exits when done (its memory goes back to the system, not to the server's heap).

The parent only unpickles frames (about 1/20 of the parsing time) and hands
them on as column chunks, pausing between them like any other load.

Frames: ``H`` + pickled column names (first), ``C`` + pickled list of columns
(one per chunk), ``E`` (end), or ``X`` + error text (then the child exits).
Whatever the child raises (a driver error, a ``ValueError`` from a bad
setting, a bug) becomes that final ``X`` frame: its type and message, the
password masked, capped at ``ERROR_CHARS``; the parent raises it as
:class:`SourceError`. A child that dies without one (killed, crashed) is
reported with its exit code or signal.

Guarantees: the child is always reaped: on a normal end, on an error, on a
timeout (killed), when the consumer of the stream raises (killed), and when
the read is cancelled (killed from the cancelling thread through ``Cancel``,
whose action is unregistered before the child is reaped). The
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
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pymysql
import pymysql.cursors

from pineapple.resource import redact

from ._cancel import Cancel
from ._errors import SourceError
from ._json_values import json_converter

__all__ = ["ERROR_CHARS", "FRAME_ROWS", "error_text", "read_in_child"]

FRAME_ROWS = 2048
"""Rows per frame: unpickling one takes well under a millisecond in the parent."""

ERROR_CHARS = 2000
"""Longest error text the child sends (and the parent reads) for a failed load."""

_REAP_SECONDS = 1.0  # bounds the wait for a dead child's exit code

T = TypeVar("T")
ColumnChunks = Iterator[list[list[Any]]]

_context_lock = threading.Lock()
_context: Any = None


def _forkserver() -> Any:
    """The forkserver context, its preload set once (forks then import nothing)."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["__main__", __name__])
            _context = ctx
        return _context


def _columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    columns = [list(values) for values in zip(*rows, strict=True)]
    for i, column in enumerate(columns):
        convert = json_converter(column)
        if convert is not None:
            columns[i] = [None if v is None else convert(v) for v in column]
    return columns


def error_text(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """``Type: message`` of ``exc``, ``secrets`` masked, at most ``ERROR_CHARS`` long."""
    return _capped(redact(f"{type(exc).__name__}: {exc}", secrets))


def _capped(text: str) -> str:
    if len(text) <= ERROR_CHARS:
        return text
    return text[: ERROR_CHARS - 30] + f"... ({len(text) - ERROR_CHARS + 30} more characters)"


def _child(
    out: multiprocessing.connection.Connection,
    connect_kwargs: dict[str, Any],
    sql: str,
    nice: int,
) -> None:
    """The child's body: stream ``sql`` as column frames into ``out``."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    try:
        conn = pymysql.connect(**connect_kwargs, autocommit=True)
        try:
            with conn.cursor(pymysql.cursors.SSCursor) as cur:
                cur.execute(sql)
                names = [d[0] for d in cur.description or ()]
                out.send_bytes(b"H" + pickle.dumps(names, pickle.HIGHEST_PROTOCOL))
                while rows := cur.fetchmany(FRAME_ROWS):
                    frame = pickle.dumps(_columns(list(rows)), pickle.HIGHEST_PROTOCOL)
                    out.send_bytes(b"C" + frame)
        finally:
            with contextlib.suppress(pymysql.Error, OSError):
                conn.close()
        out.send_bytes(b"E")
    except Exception as exc:  # whatever it is, the parent reports it (no traceback here)
        password = str(connect_kwargs.get("password") or "")
        with contextlib.suppress(OSError):
            out.send_bytes(b"X" + error_text(exc, (password,)).encode())
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


class _Frames:
    """The parent's end: reads frames with a deadline per frame; raises SourceError."""

    def __init__(
        self,
        inbox: multiprocessing.connection.Connection,
        child: Any,
        where: str,
        timeout: float,
        cancel: Cancel,
    ):
        self._inbox = inbox
        self._child = child
        self._where = where
        self._timeout = timeout
        self._cancel = cancel

    def next(self) -> tuple[bytes, bytes]:
        try:
            if not self._inbox.poll(self._timeout):
                raise SourceError(
                    f"{self._where}: loader process sent nothing for {self._timeout:g}s"
                )
            frame = self._inbox.recv_bytes()
        except (EOFError, OSError):
            if self._cancel.cancelled:
                raise SourceError(f"{self._where}: load cancelled (stopping)") from None
            why = _exit_reason(self._child)
            raise SourceError(
                f"{self._where}: loader process {why} before the end, without an error"
            ) from None
        kind, body = frame[:1], frame[1:]
        if kind == b"X":
            # the child capped and redacted it; cap again: the pipe is not trusted to
            text = _capped(body[: 4 * ERROR_CHARS].decode("utf-8", "replace"))
            raise SourceError(f"{self._where}: {text}")
        return kind, body

    def chunks(self) -> ColumnChunks:
        while True:
            kind, body = self.next()
            if kind == b"E":
                return
            if kind != b"C":
                raise SourceError(f"{self._where}: loader process sent a bad frame {kind!r}")
            yield pickle.loads(body)


def read_in_child(
    connect_kwargs: dict[str, Any],
    sql: str,
    sink: Callable[[list[str], ColumnChunks], T],
    *,
    where: str,
    timeout: float,
    nice: int = 10,
    cancel: Cancel | None = None,
) -> T:
    """Run ``sql`` in a child process; ``sink(names, column_chunks)`` consumes its rows.

    ``timeout`` bounds the wait for each frame (connect, query start, every
    chunk); on expiry the child is killed and SourceError raised. The child's
    own error (any exception) is raised as SourceError with its message.
    ``cancel``: its ``cancel()`` kills the child, so this raises at once.
    """
    cancel = cancel if cancel is not None else Cancel()
    ctx = _forkserver()
    inbox, outbox = ctx.Pipe(duplex=False)
    child = ctx.Process(
        target=_child, args=(outbox, connect_kwargs, sql, nice), name="pineapple-feed-loader"
    )
    try:
        child.start()
    except BaseException:
        inbox.close()
        outbox.close()
        raise
    outbox.close()  # the child holds the only writer: EOF when it dies
    try:
        # the kill is unregistered when this block exits, before the child is reaped
        with cancel.on_cancel(child.kill):
            frames = _Frames(inbox, child, where, timeout, cancel)
            kind, body = frames.next()
            if kind != b"H":
                raise SourceError(f"{where}: loader process sent a bad first frame {kind!r}")
            return sink(pickle.loads(body), frames.chunks())
    finally:
        inbox.close()
        if child.is_alive():
            child.join(0.05)
        if child.is_alive():
            child.kill()
        child.join()
        child.close()
