"""``POST /execute`` answered by the HTTP protocol itself: no ASGI round trip.

uvicorn hands every request to the ASGI app: a scope dict, a request-response
cycle with its event, a task on the loop, a ``receive`` and two ``send``
messages whose headers it checks one by one. For a small ``/execute`` whose
engine does no blocking I/O none of that does anything: the body is read
whole by the parser, the engine runs inline on the loop anyway. So the edge's
protocol (``server/http/_protocol.py``) answers such a request from the
parser's own callbacks: it keeps the body as the parser delivers it, and when
the message is complete asks the endpoint for the answer's status and bytes
(:meth:`~server.http._execute.ExecuteEndpoint.answer`: the answer maker the
ASGI endpoint runs too, with the same body count, snapshot borrow, deadline,
responder and 500, and the same headers: ``x-request-id``, from the
request's ``X-Request-Id`` that :func:`direct_headers` picks up or made, and
with ``--revision-header`` the revision). :func:`frame` puts the status line,
uvicorn's default headers, the endpoint's type and length and its headers in
front, byte for byte what uvicorn sends for the ASGI path; the answer leaves
in one write at the end of the loop's turn with the turn's other answers
(``server/http/_answer_batch.py``: held at most about half a millisecond, 64
KiB a turn; an answer with ``Connection: close`` is written at once).

A request is answered directly when, at its headers: it is ``POST`` to
``/execute`` or ``/execute/{group}`` (:func:`direct_path`: a query string
allowed; no percent-escape, fragment or absolute form), it has a
``Content-Length`` of at most ``Config.inline_body_bytes`` (or no body) and no
``Transfer-Encoding``, no ``Expect: 100-continue`` and no upgrade
(:func:`direct_headers`); no other request of its connection is under way,
its writer is not paused (a client that does not read gets no more answers
written than under uvicorn) and the connection cap is not reached (uvicorn's
503 stays uvicorn's); the app has no user middleware (``_App``), and uvicorn
serves no ``root_path``. Every other request, and a direct one whose serving
snapshot turns out to block (``answer`` gives None), goes to the ASGI app as
before: the scope is built then, by uvicorn's own code, and the body handed
over whole.

What stays: the read deadlines (a direct request under way may be answered
408), drain and the write deadline, uvicorn's keep-alive time (one
:class:`KeepAliveTimer` per connection) and request count, the ``/execute``
metrics and the access log (``--access-log``: :func:`DirectRoute.answered`).

Guarantees:
- Event loop only (parser callbacks), no lock. A direct request holds nothing
  but its body between its callbacks (at most ``inline_body_bytes``, as
  framed by ``Content-Length``); its body count and snapshot borrow live and
  end inside ``answer``, so a connection lost mid-body leaks nothing.
- Answers keep the connection's order: a direct request starts only when no
  earlier one is under way, and ends within its last callback; its answer,
  if held, is written before anything else the connection writes or closes
  with (the app's answers, a 400, a 408, a close), and dropped when the
  connection is closing by the end of the turn.
"""

from __future__ import annotations

import asyncio
from asyncio import TimerHandle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from ._access_log import log_request
from ._answer_batch import AnswerBatch
from ._execute import ExecuteEndpoint, Served
from ._read_timeouts import TIMER_EARLY
from ._request_id import REQUEST_ID_HEADER

__all__ = ["DirectRoute", "KeepAliveTimer", "direct_headers", "direct_path", "frame"]

_PATH = b"/execute"
_SUBPATH = b"/execute/"
_CONTENT = b"content-type: application/json\r\ncontent-length: %d\r\n"
_HEADER_LINE = b"%s: %s\r\n"
"""One header line of the headers after the type and length."""
_END_KEEP = b"\r\n"
_END_CLOSE = b"connection: close\r\n\r\n"


class _Middlewares(Protocol):
    @property
    def user_middleware(self) -> Sequence[object]: ...


@dataclass(frozen=True)
class DirectRoute:
    """What a connection needs to answer ``/execute`` itself."""

    execute: ExecuteEndpoint
    app: _Middlewares
    """The app (``_App``): with user middleware, every request goes to it."""
    access_log: bool = False
    """Log each direct answer as ``--access-log`` does."""
    batch: AnswerBatch = field(default_factory=AnswerBatch, compare=False)
    """The answers held to the end of the loop's turn (one event loop's connections)."""

    def answered(
        self,
        status: int,
        seconds: float,
        client: tuple[str, int] | None,
        path: str,
        rid: str,
        served: Served,
    ) -> None:
        """Count (and with ``--access-log`` log) one direct answer (``rid``: the request's
        id; ``served``: what served it)."""
        self.execute.observe(status, seconds)
        if self.access_log:
            log_request(client, "POST", path, status, seconds * 1000, rid, served)


def direct_path(target: bytes) -> bytes | None:
    """The path of a request target answered directly (``/execute[/group][?query]``);
    None for any other (or one the app's router must decode)."""
    path = target.partition(b"?")[0]
    if path != _PATH and not path.startswith(_SUBPATH):
        return None
    if _PERCENT in path or _HASH in target or not path.isascii():
        return None
    return path


def direct_headers(
    headers: list[tuple[bytes, bytes]], inline_bytes: int
) -> tuple[bool, bytes | None] | None:
    """Whether a request with ``headers`` carries a ``Connection`` header, and its
    ``X-Request-Id`` (None: none), when it is answered directly (its body at most
    ``inline_bytes``); None: the app answers it."""
    length = 0
    connection = False
    given = None
    for name, value in headers:  # bounded: the headers the parser took
        if name == b"content-length":  # one, all digits: llhttp answers 400 otherwise
            length = int(value)
        elif name in _TO_APP:
            return None
        elif name == b"connection":
            connection = True
        elif name == REQUEST_ID_HEADER:
            given = value
    if length > inline_bytes:
        return None
    return connection, given


def frame(
    status: int,
    out: bytes,
    headers: list[tuple[bytes, bytes]],
    keep_alive: bool,
    default_headers: list[tuple[bytes, bytes]],
) -> bytes:
    """The whole answer on the wire: the bytes uvicorn sends for the ASGI endpoint's
    ``status``, ``out`` and ``headers`` (after uvicorn's default ones, its type and length,
    then ``headers``, as :meth:`~server.http._execute.ExecuteEndpoint.answer` gives them)."""
    return b"".join(
        (
            STATUS_LINE[status],
            _default_headers(default_headers),
            _CONTENT % len(out),
            *map(_HEADER_LINE.__mod__, headers),  # bounded: one or two
            _END_KEEP if keep_alive else _END_CLOSE,
            out,
        )
    )


class KeepAliveTimer:
    """After direct answers: idle until the next request, at most uvicorn's keep-alive time.

    uvicorn arms a timer per answer; one timer per connection does here: it
    fires at the keep-alive time after the answer that armed it, and then
    re-arms for the latest answer, ends (a request has begun since: its
    answer arms again) or calls ``on_idle`` (uvicorn's handler: a close).
    """

    __slots__ = ("_loop", "_on_idle", "_seconds", "_since", "_timer")

    def __init__(
        self, seconds: float, loop: asyncio.AbstractEventLoop, on_idle: Callable[[], None]
    ) -> None:
        self._seconds = seconds
        self._loop = loop
        self._on_idle = on_idle
        self._since = 0.0
        """Loop time of the latest direct answer; 0: a request has begun since."""
        self._timer: TimerHandle | None = None

    def idle(self) -> None:
        """A direct answer was made: the connection is idle from now."""
        self._since = now = self._loop.time()
        if self._timer is None:
            self._timer = self._loop.call_at(now + self._seconds, self._over)

    def busy(self) -> None:
        """A request has begun."""
        self._since = 0.0

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _over(self) -> None:
        self._timer = None
        since = self._since
        if not since:
            return
        due = since + self._seconds
        if due > self._loop.time() + TIMER_EARLY:
            self._timer = self._loop.call_at(due, self._over)
        else:
            self._on_idle()


_PERCENT, _HASH = ord("%"), ord("#")
"""Bytes looked for as ints: ``b"%" in path`` first tries (and fails) to read ``b"%"``
as an int, a raised and cleared TypeError each time (~1,700 instructions)."""

_TO_APP = frozenset((b"transfer-encoding", b"upgrade"))
"""Headers whose requests go to the app (a streamed body, a protocol switch)."""

_cached: tuple[object, bytes] = (None, b"")


def _default_headers(headers: list[tuple[bytes, bytes]]) -> bytes:
    """uvicorn's default header lines (date, server), joined once per list uvicorn makes."""
    global _cached
    if _cached[0] is not headers:  # uvicorn makes a new list each second (the date)
        lines = b"".join(b"%s: %s\r\n" % (name, value) for name, value in headers)
        _cached = (headers, lines)
    return _cached[1]
