"""The protocol every connection of ``pineapple serve`` runs: one class over uvicorn's.

:func:`edge_protocol` gives uvicorn (``uvicorn.Config(http=...)``) one
subclass of its httptools protocol, :class:`EdgeProtocol`, which overrides
each uvicorn callback it needs exactly once (:data:`OVERRIDDEN`) and composes
plain objects for the rules of a connection:

- the read deadlines (``server/http/_read_timeouts.py``: one
  :class:`~server.http._read_timeouts.ReadDeadline` per connection; past one:
  a 408 when nothing is being answered, else a silent close);
- drain, the write deadline, the probes' room past the connection cap and the
  half close (``server/http/_connections.py``: the server's
  :class:`~server.http._connections.Drain`, one
  :class:`~server.http._connections.WriteDeadline` per connection,
  :func:`~server.http._connections.is_probe`,
  :func:`~server.http._connections.answer_after_eof`);
- direct answers (``server/http/_direct.py``): a small ``POST /execute`` is
  answered from the parser's callbacks, its status and bytes made by the
  endpoint's one function (``ExecuteEndpoint.answer``, the answer maker of
  the ASGI path too), framed by :func:`~server.http._direct.frame` and held
  for the turn's :class:`~server.http._answer_batch.AnswerBatch`; every other
  request goes to the ASGI app, as under uvicorn.

Each callback reads top to bottom in the order of the rules; the module
docstrings of those files say what each rule guarantees.

uvicorn internals this file relies on (``_uvicorn_range.py`` pins the
releases and checks the methods; ``tests/server/http/test_protocol.py``
checks that the lists agree and each callback is overridden once):

- methods overridden (:data:`OVERRIDDEN`), each calling uvicorn's own unless
  its docstring says otherwise, and uvicorn's kept as they are (:data:`KEPT`);
  uvicorn's ``on_message_begin``,
  ``on_headers_complete``, ``on_body`` and ``on_message_complete`` are also
  called late for a direct request handed to the app;
- attributes (:data:`ATTRIBUTES`): ``loop``, ``transport``, ``client``,
  ``parser``, ``url``, ``headers``, ``expect_100_continue``, ``cycle``
  (``response_started``, ``response_complete``, ``keep_alive``,
  ``more_body``), ``pipeline``, ``flow.write_paused``, ``limit_concurrency``,
  ``connections``, ``tasks``, ``root_path``, ``timeout_keep_alive``,
  ``server_state`` (``default_headers``, ``total_requests``) and the module's
  ``STATUS_LINE``; ``on_message_begin`` resetting ``url``, ``headers`` and
  ``expect_100_continue`` and building ``scope``; ``on_headers_complete``
  reading ``limit_concurrency`` for its 503.

Guarantees: event loop only (protocol callbacks and the timers), no lock.
A timer never writes to or closes a connection that is already closing or
that this protocol no longer drives (an upgrade handed it to another one).
Every timer of a connection is cancelled when it is lost.
"""

from __future__ import annotations

import asyncio
import time
from asyncio import TimerHandle
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from ._connections import (
    IDLE_GRACE_SECONDS,
    ConnectionRules,
    Drain,
    WriteDeadline,
    abort_unread,
    answer_after_eof,
    is_probe,
)
from ._direct import DirectRoute, KeepAliveTimer, direct_headers, direct_path, frame
from ._read_timeouts import ReadDeadline, ReadTimeouts, TimeoutKind, report_timeout, response_408

__all__ = ["ATTRIBUTES", "KEPT", "OVERRIDDEN", "EdgeProtocol", "edge_protocol"]

OVERRIDDEN = (
    "connection_made",
    "connection_lost",
    "eof_received",
    "on_message_begin",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "send_400_response",
    "handle_websocket_upgrade",
    "timeout_keep_alive_handler",
    "shutdown",
    "pause_writing",
    "resume_writing",
)
"""``HttpToolsProtocol`` methods :class:`EdgeProtocol` overrides (each once)."""

KEPT = ("data_received", "on_url", "on_header", "on_response_complete")
"""``HttpToolsProtocol`` methods the edge relies on as uvicorn wrote them: the parser
fed, the request target and headers gathered, a response's end counted (its
keep-alive timer, the next pipelined request)."""

ATTRIBUTES = (
    "loop",
    "transport",
    "client",
    "parser",
    "url",
    "headers",
    "expect_100_continue",
    "scope",
    "cycle",
    "pipeline",
    "flow",
    "limit_concurrency",
    "connections",
    "tasks",
    "root_path",
    "timeout_keep_alive",
    "server_state",
)
"""``HttpToolsProtocol`` instance attributes :class:`EdgeProtocol` reads or sets."""

_monotonic = time.monotonic


def edge_protocol(
    timeouts: ReadTimeouts, rules: ConnectionRules, drain: Drain, route: DirectRoute | None = None
) -> type[EdgeProtocol]:
    """The HTTP protocol class to give ``uvicorn.Config(http=...)``.

    ``route``: small ``/execute`` requests are answered by the protocol
    (``server/http/_direct.py``); None sends every request to the app.
    """

    class _Bound(EdgeProtocol):
        limits = timeouts
        connection_rules = rules
        server_drain = drain
        direct = route

    return _Bound


class EdgeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the edge's rules (see the module).

    Use :func:`edge_protocol`, which binds the class attributes.
    """

    limits: ClassVar[ReadTimeouts] = ReadTimeouts()
    connection_rules: ClassVar[ConnectionRules] = ConnectionRules()
    server_drain: ClassVar[Drain] = Drain()
    direct: ClassVar[DirectRoute | None] = None

    _reads: ReadDeadline
    _writes: WriteDeadline
    _idle: KeepAliveTimer
    _grace: TimerHandle | None = None
    """The idle grace after the listener closed (armed once)."""
    _direct_path: str | None = None
    """The path of the direct request under way (its headers are in); None: none."""
    _direct_chunks: list[bytes]
    _direct_keep_alive = True
    _direct_started = 0.0
    """When the direct request's headers were complete (monotonic): its deadline, its latency."""
    _scoped = True
    """Whether uvicorn's ``scope`` of the current request is built."""

    # -- the connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        HttpToolsProtocol.connection_made(self, transport)
        loop = self.loop
        self._writes = WriteDeadline(self.connection_rules.write_seconds, loop, self._write_expired)
        self._idle = KeepAliveTimer(self.timeout_keep_alive, loop, self.timeout_keep_alive_handler)
        self.server_drain.connections.add(self)
        self._reads = reads = ReadDeadline(self.limits, loop, self._read_expired)
        reads.start()  # the first request starts at accept

    def connection_lost(self, exc: Exception | None) -> None:
        self._reads.cancel()
        self._writes.cancel()
        self._idle.cancel()
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        self.server_drain.connections.discard(self)
        HttpToolsProtocol.connection_lost(self, exc)

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio's signature
        """The client shut down its write side: answer what it sent whole, then close.

        True (asyncio keeps the transport open for writing) while the latest
        request, received whole, is being answered; its answer says
        ``Connection: close`` and closes the transport. Otherwise None: closed now.
        (uvicorn's returns None.)
        """
        self.write_held()
        return True if answer_after_eof(self.cycle) else None

    # -- parser callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.direct is None:
            HttpToolsProtocol.on_message_begin(self)
        else:
            # The scope waits for the headers: a direct request never needs it. What
            # uvicorn's on_url/on_header fill in is reset here as uvicorn would.
            self._idle.busy()
            self.url = b""
            self.expect_100_continue = False
            self.headers = []
            self._scoped = False
        self._reads.begin()

    def on_headers_complete(self) -> None:
        self._reads.headers_done = True
        if not self._take_directly():
            self.write_held()  # the app's answer comes after those held
            self._build_scope()
            if self._at_connection_cap() and is_probe(self.url):
                limit = self.limit_concurrency
                self.limit_concurrency = None  # uvicorn's 503 past the cap skips probes
                try:
                    HttpToolsProtocol.on_headers_complete(self)
                finally:
                    self.limit_concurrency = limit
            else:
                HttpToolsProtocol.on_headers_complete(self)
        self._writes.headers()
        if self.server_drain.started:
            self._direct_keep_alive = False
            if self.cycle is not None:
                self.cycle.keep_alive = False

    def on_body(self, body: bytes) -> None:
        if self._direct_path is None:
            HttpToolsProtocol.on_body(self, body)
        else:
            self._direct_chunks.append(body)  # bounded: Content-Length, checked at the headers

    def on_message_complete(self) -> None:
        if self._direct_path is None:
            HttpToolsProtocol.on_message_complete(self)
        else:
            self._answer_directly(self._direct_path)
        self._reads.complete()

    # -- what writes or closes before the held answers are written ---------------------------

    def send_400_response(self, msg: str) -> None:
        self.write_held()
        HttpToolsProtocol.send_400_response(self, msg)

    def handle_websocket_upgrade(self) -> None:
        self.write_held()
        self.server_drain.connections.discard(self)  # another protocol drives it from now
        HttpToolsProtocol.handle_websocket_upgrade(self)

    def timeout_keep_alive_handler(self) -> None:
        self.write_held()
        HttpToolsProtocol.timeout_keep_alive_handler(self)

    def shutdown(self) -> None:
        """The listener closed: answer a request under way; give an idle one a moment.

        (uvicorn's closes an idle connection at once: not called.)
        """
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            self.drain()
            return
        if self._reads.begun:  # a request's first bytes are here: answered, then closed
            return
        if self._grace is None:
            self._grace = self.loop.call_later(IDLE_GRACE_SECONDS, self._close_if_idle)

    # -- the writer's flow control: the write deadline --------------------------------------

    def pause_writing(self) -> None:
        HttpToolsProtocol.pause_writing(self)
        self._writes.paused()

    def resume_writing(self) -> None:
        HttpToolsProtocol.resume_writing(self)
        self._writes.resumed()

    # -- drain ------------------------------------------------------------------------------

    def drain(self) -> None:
        """Answer what is under way (and queued) with ``Connection: close``."""
        self._direct_keep_alive = False
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
        for cycle, _app in self.pipeline:  # bounded: the requests queued on this connection
            cycle.keep_alive = False

    def _close_if_idle(self) -> None:
        cycle = self.cycle
        idle = (cycle is None or cycle.response_complete) and not self._reads.begun
        if idle and self._drives_transport():
            self.write_held()
            self.transport.close()

    # -- the deadlines' ends ----------------------------------------------------------------

    def _drives_transport(self) -> bool:
        transport = self.transport
        return not transport.is_closing() and transport.get_protocol() is self

    def _read_expired(self, kind: TimeoutKind) -> None:
        if not self._drives_transport():
            return
        self.write_held()  # answers ready before this request's deadline go first
        answered = self._reads.begun and self._nothing_being_answered()
        transport = self.transport
        if answered:
            transport.write(response_408(self.server_state.default_headers))
        transport.close()
        report_timeout(self._reads, kind, self.client, answered)

    def _nothing_being_answered(self) -> bool:
        """Whether a 408 may be written now: no response of this connection is under way."""
        if self._direct_path is not None:  # begun, headers complete, nothing written yet
            return True
        cycle: RequestResponseCycle | None = self.cycle  # None before the first request
        if cycle is None:
            return True
        if self._reads.headers_done:  # ``cycle`` is this request's (queued if ``pipeline``)
            return not self.pipeline and not cycle.response_started
        return cycle.response_complete  # ``cycle`` is the previous request's

    def _write_expired(self) -> None:
        if not self.flow.write_paused or self.transport.get_protocol() is not self:
            return
        seconds = self.connection_rules.write_seconds
        abort_unread(self.transport, self.client, seconds)
        hook = self.connection_rules.on_write_timeout
        if hook is not None:
            hook()

    # -- direct answers ---------------------------------------------------------------------

    def write_held(self) -> None:
        """Write the answers held to the end of the loop's turn now
        (``server/http/_answer_batch.py``), before this connection writes or closes with
        anything else."""
        route = self.direct
        if route is not None:
            route.batch.write()

    def _at_connection_cap(self) -> bool:
        """uvicorn's own test for its 503: open connections or tasks at ``limit_concurrency``."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def _take_directly(self) -> bool:
        """Whether the request whose headers just completed is answered here
        (``server/http/_direct.py``)."""
        route = self.direct
        if route is None:
            return False
        path = direct_path(self.url)
        if path is None:
            return False
        cycle = self.cycle  # None before the first request; else the latest one's
        if (
            self.parser.get_method() != b"POST"
            or self.expect_100_continue
            or route.app.user_middleware
            or self.root_path
            or (cycle is not None and not cycle.response_complete)  # uvicorn queues it
            or self.flow.write_paused
            or self.transport.is_closing()
            or self._at_connection_cap()  # uvicorn's 503 stays uvicorn's
        ):
            return False
        connection = direct_headers(self.headers, route.execute.inline_bytes)
        if connection is None:
            return False
        parser = self.parser
        keep_alive = parser.should_keep_alive()
        if keep_alive and connection:  # HTTP/1.0 keeps a connection only when asked; uvicorn never
            keep_alive = parser.get_http_version() != "1.0"
        self._direct_path = path.decode("ascii")
        self._direct_chunks = []
        self._direct_keep_alive = keep_alive
        self._direct_started = _monotonic()
        return True

    def _answer_directly(self, path: str) -> None:
        """The direct request is complete: answer it, or hand it to the app."""
        self._direct_path = None
        route = self.direct
        assert route is not None  # a direct request exists only with a route
        chunks = self._direct_chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        started = self._direct_started
        batch = route.batch
        batch.before_run()
        answer = route.execute.answer(body, path, started)
        if answer is None:
            self.write_held()  # the app's answer comes after those held
            self._to_app(body)
            return
        status, out = answer
        keep_alive = self._direct_keep_alive
        whole = frame(status, out, keep_alive, self.server_state.default_headers)
        self.server_state.total_requests += 1
        now = _monotonic()
        transport = self.transport
        if keep_alive:
            self._idle.idle()
            if not batch.hold(transport, whole, self.loop, started, now):
                transport.write(whole)
        else:
            self.write_held()
            transport.write(whole)
            transport.close()
        route.answered(status, now - started, self.client, path)

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
