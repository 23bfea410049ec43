"""``POST /execute`` answered by the HTTP protocol itself: no ASGI round trip.

uvicorn hands every request to the ASGI app: a scope dict, a request-response
cycle with its event, a task on the loop, a ``receive`` and two ``send``
messages whose headers it checks one by one. For a small ``/execute`` whose
engine does no blocking I/O none of that does anything: the body is read
whole by the parser, the engine runs inline on the loop anyway. So
:class:`DirectProtocol`, at the bottom of the protocol every connection of
``pineapple serve`` runs (``server/http/_connections.py``), answers such a request
from the parser's own callbacks: it keeps the body as the parser delivers
it, and when the message is complete runs
:meth:`~server.http._execute.ExecuteEndpoint.answer_inline` (the same body count,
snapshot borrow, deadline, responder and 500 as the ASGI endpoint). The
status line, uvicorn's default headers, the endpoint's headers (type, length,
``x-request-id``, and with ``--revision-header`` the revision) and the
body, byte for byte what the ASGI path sends, leave in one write at the end
of the loop's turn with the turn's other answers (``server/http/_answer_batch.py``:
held at most about half a millisecond, 64 KiB a turn; an answer with
``Connection: close`` is written at once).

A request is answered directly when, at its headers: it is ``POST`` to
``/execute`` or ``/execute/{group}`` (a query string allowed; no
percent-escape, fragment or absolute form), it has a ``Content-Length`` of at
most ``Config.inline_body_bytes`` (or no body) and no ``Transfer-Encoding``,
no ``Expect: 100-continue`` and no upgrade; no other request of its
connection is under way, its writer is not paused (a client that does not
read gets no more answers written than under uvicorn) and the connection cap
is not reached (uvicorn's 503 stays uvicorn's); the app has no user
middleware (``_App``), and uvicorn serves no ``root_path``. Every other
request, and a direct one whose serving snapshot turns out to block
(``answer_inline`` gives None), goes to the ASGI app as before: the scope is
built then, by uvicorn's own code, and the body handed over whole.

What stays: the read deadlines (``server/http/_read_timeouts.py`` sees a direct
request under way, and may answer it 408), drain and the write deadline
(``server/http/_connections.py``), uvicorn's keep-alive timer and request count
(``on_response_complete``), the ``/execute`` metrics and the access log
(``--access-log``: :func:`server.http._access_log.log_request`).

uvicorn internals relied on, beside those of ``_read_timeouts`` and
``_connections``: ``on_message_begin`` building ``scope`` and resetting
``url``, ``headers`` and ``expect_100_continue``; ``on_headers_complete``,
``on_body`` and ``on_message_complete`` taking a request to the app;
``on_response_complete``; ``STATUS_LINE``; ``parser``, ``root_path``,
``tasks``, ``connections``, ``flow.write_paused``; and, as the protocol's
own writes and closes outside a response (each writes the held answers
first), ``send_400_response``, ``handle_websocket_upgrade``,
``timeout_keep_alive_handler`` and ``shutdown``.

Guarantees:
- Event loop only (parser callbacks), no lock. A direct request holds nothing
  but its body between its callbacks (at most ``inline_body_bytes``, as
  framed by ``Content-Length``); its body count and snapshot borrow live and
  end inside ``answer_inline``, so a connection lost mid-body leaks nothing.
- Answers keep the connection's order: a direct request starts only when no
  earlier one is under way, and ends within its last callback; its answer,
  if held, is written before anything else the connection writes or closes
  with (the app's answers, a 400, a 408, a close), and dropped when the
  connection is closing by the end of the turn.
"""

from __future__ import annotations

import time
from asyncio import TimerHandle
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ._access_log import log_request
from ._answer_batch import AnswerBatch
from ._execute import ExecuteEndpoint
from ._request_id import REQUEST_ID_HEADER, request_id

__all__ = ["TIMER_EARLY", "DirectProtocol", "DirectRoute"]

_monotonic = time.monotonic

_PATH = b"/execute"
_SUBPATH = b"/execute/"
_CONTENT = b"content-type: application/json\r\ncontent-length: %d\r\n"
_ID = b"x-request-id: %s\r\n"
_REVISION = b"x-pineapple-config-revision: %s\r\n"
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


class DirectProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol answering small ``POST /execute`` requests itself.

    ``direct`` (bound by ``server/_connections.serving_protocol``) None: uvicorn's
    protocol unchanged.
    """

    direct: ClassVar[DirectRoute | None] = None
    _direct_path: str | None = None
    """The path of the direct request under way (its headers are in); None: none."""
    _direct_chunks: list[bytes]
    _direct_id: bytes | None = None
    """The ``X-Request-Id`` the direct request under way carries, if any."""
    _direct_keep_alive = True
    _direct_started = 0.0
    """When the direct request's headers were complete (monotonic): its deadline, its latency."""
    _scoped = True
    """Whether uvicorn's ``scope`` of the current request is built."""
    _idle_since = 0.0
    """Loop time of the latest direct answer; 0: a request has begun since."""
    _idle_timer: TimerHandle | None = None

    # -- parser callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.direct is None:
            super().on_message_begin()
            return
        # The scope waits for the headers: a direct request never needs it. What
        # uvicorn's on_url/on_header fill in is reset here as uvicorn would.
        self._idle_since = 0.0
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._scoped = False

    def on_headers_complete(self) -> None:
        if not self._take_directly():
            self.write_held()  # the app's answer comes after those held
            self._build_scope()
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._direct_path is None:
            super().on_body(body)
        else:
            self._direct_chunks.append(body)  # bounded: Content-Length, checked at the headers

    def on_message_complete(self) -> None:
        path = self._direct_path
        if path is None:
            super().on_message_complete()
            return
        self._direct_path = None
        route = self.direct
        assert route is not None  # a direct request exists only with a route
        chunks = self._direct_chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        started = self._direct_started
        batch = route.batch
        batch.before_run()
        rid = request_id(self._direct_id)
        answer = route.execute.answer_inline(body, path, started, rid)
        if answer is None:
            self.write_held()  # the app's answer comes after those held
            self._to_app(body)
            return
        status, out, served = answer
        keep_alive = self._direct_keep_alive
        extra = _ID % rid.encode("ascii")
        if served is not None and route.execute.revision_header:
            extra += _REVISION % served[0].encode("ascii")
        whole = b"".join(
            (
                STATUS_LINE[status],
                _default_headers(self.server_state.default_headers),
                _CONTENT % len(out),
                extra,
                _END_KEEP if keep_alive else _END_CLOSE,
                out,
            )
        )
        self.server_state.total_requests += 1
        now = _monotonic()
        transport = self.transport
        if keep_alive:
            self._idle()
            if not batch.hold(transport, whole, self.loop, started, now):
                transport.write(whole)
        else:
            self.write_held()
            transport.write(whole)
            transport.close()
        seconds = now - started
        route.execute.observe(status, seconds)
        if route.access_log:
            log_request(self.client, "POST", path, status, seconds * 1000, rid, served)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        super().connection_lost(exc)

    # -- what writes or closes before the held answers are written ---------------------------

    def send_400_response(self, msg: str) -> None:
        self.write_held()
        super().send_400_response(msg)

    def handle_websocket_upgrade(self) -> None:
        self.write_held()
        super().handle_websocket_upgrade()

    def timeout_keep_alive_handler(self) -> None:
        self.write_held()
        super().timeout_keep_alive_handler()

    def shutdown(self) -> None:
        self.write_held()
        super().shutdown()

    # -- for the layers above ----------------------------------------------------------------

    def _at_connection_cap(self) -> bool:
        """uvicorn's own test for its 503: open connections or tasks at ``limit_concurrency``."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def _direct_under_way(self) -> bool:
        """Whether a direct request has its headers and not yet its answer."""
        return self._direct_path is not None

    def write_held(self) -> None:
        """Write the answers held to the end of the loop's turn now
        (``server/http/_answer_batch.py``), before this connection writes or closes with
        anything else."""
        route = self.direct
        if route is not None:
            route.batch.write()

    def _close_direct_after_answer(self) -> None:
        """Answer the direct request under way (if any) with ``Connection: close``."""
        self._direct_keep_alive = False

    # -- deciding, and handing a request to the app -----------------------------------------

    def _take_directly(self) -> bool:
        """Whether the request whose headers just completed is answered here (see the module)."""
        route = self.direct
        if route is None:
            return False
        target: bytes = self.url
        path = target.partition(b"?")[0]
        if path != _PATH and not path.startswith(_SUBPATH):
            return False
        cycle = self.cycle  # None before the first request; else the latest one's
        if (
            self.parser.get_method() != b"POST"
            or self.expect_100_continue
            or _PERCENT in path
            or _HASH in target
            or not path.isascii()
            or route.app.user_middleware
            or self.root_path
            or (cycle is not None and not cycle.response_complete)  # uvicorn queues it
            or self.flow.write_paused
            or self.transport.is_closing()
            or self._at_connection_cap()  # uvicorn's 503 stays uvicorn's
        ):
            return False
        length = 0
        connection = False
        given = None
        for name, value in self.headers:  # bounded: the headers the parser took
            if name == b"content-length":  # one, all digits: llhttp answers 400 otherwise
                length = int(value)
            elif name in _TO_APP:
                return False
            elif name == b"connection":
                connection = True
            elif name == REQUEST_ID_HEADER:
                given = value
        if length > route.execute.inline_bytes:
            return False
        parser = self.parser
        keep_alive = parser.should_keep_alive()
        if keep_alive and connection:  # HTTP/1.0 keeps a connection only when asked; uvicorn never
            keep_alive = parser.get_http_version() != "1.0"
        self._direct_path = path.decode("ascii")
        self._direct_id = given
        self._direct_chunks = []
        self._direct_keep_alive = keep_alive
        self._direct_started = _monotonic()
        return True

    def _build_scope(self) -> None:
        """uvicorn's scope of the current request, by uvicorn's own ``on_message_begin``."""
        if self._scoped:
            return
        url, headers, expect = self.url, self.headers, self.expect_100_continue
        HttpToolsProtocol.on_message_begin(self)
        self.url, self.expect_100_continue = url, expect
        self.headers.extend(headers)  # the very list in scope["headers"]
        self._scoped = True

    def _to_app(self, body: bytes) -> None:
        """Give a complete direct request to the ASGI app, as uvicorn would have."""
        self._build_scope()
        HttpToolsProtocol.on_headers_complete(self)  # a cycle and its task (or uvicorn's 503)
        if not self._direct_keep_alive:
            self.cycle.keep_alive = False
        if body:
            HttpToolsProtocol.on_body(self, body)
        HttpToolsProtocol.on_message_complete(self)

    # -- the idle time between requests -------------------------------------------------------

    def _idle(self) -> None:
        """After a direct answer: idle until the next request, at most uvicorn's keep-alive time.

        uvicorn arms a timer per answer; one timer per connection does here: it
        fires at the keep-alive time after the answer that armed it, and then
        re-arms for the latest answer, ends (a request has begun since: its
        answer arms again) or closes the connection (as uvicorn's does).
        """
        self._idle_since = now = self.loop.time()
        if self._idle_timer is None:
            self._idle_timer = self.loop.call_at(now + self.timeout_keep_alive, self._idle_over)

    def _idle_over(self) -> None:
        self._idle_timer = None
        since = self._idle_since
        if not since:
            return
        due = since + self.timeout_keep_alive
        if due > self.loop.time() + TIMER_EARLY:
            self._idle_timer = self.loop.call_at(due, self._idle_over)
        else:
            self.timeout_keep_alive_handler()


TIMER_EARLY = 0.001
"""A timer may fire this much before its time (uvloop rounds delays to milliseconds)."""

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
