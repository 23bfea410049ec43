"""What a served connection may hold, and how it ends: drain, write deadline, probe room.

:func:`serving_protocol` gives uvicorn (``uvicorn.Config(http=...)``) the
protocol every connection of ``pineapple serve`` runs: the read deadlines of
``server/http/_read_timeouts.py`` plus three rules of its own.

- **Drain** (``Drain``, started by ``server/http/_graceful.py`` on SIGTERM): from
  then on every response carries ``Connection: close`` and its connection is
  closed after it, so a keep-alive client learns to reconnect (elsewhere, once
  the endpoints have moved) instead of meeting a reset. When the listener
  closes, a connection idle between requests (or that never sent a byte) gets
  :data:`IDLE_GRACE_SECONDS` to start one more request, which is answered with
  ``Connection: close``; a connection whose request has begun is answered
  first. uvicorn would close an idle connection at once, resetting a request
  already on its way.
- **Write deadline** (``--write-timeout-ms``, Go's ``WriteTimeout``): from a
  request's headers complete until its response has been handed to the
  kernel. A write only waits when the client does not read (the transport
  pauses the writer past its high-water mark), so the deadline is checked
  then: a connection whose writer is still paused at the deadline is reset
  (``SO_LINGER`` 0, then ``abort``: its unsent bytes dropped, the kernel's
  send buffer too; ``close`` would wait for a reader that never comes) and
  logged with the peer's address only.
- **Probe room**: ``/healthz`` and ``/readyz`` are answered past
  ``--max-connections`` (uvicorn answers every other request 503 there), so
  idle or slow clients filling the cap never make a liveness probe restart a
  healthy pod. A probe still needs a connection of its own: the cap bounds
  connections that *send requests*, not the accept queue.
- **Half close**: a client that shuts down its write side (``shutdown(SHUT_WR)``,
  ``curl`` with a body from a pipe, some proxies) after a whole request still
  gets its answer, as HTTP/1.1 allows: at the end of file the transport stays
  open while the latest request, received whole, is answered (with
  ``Connection: close``), then closes. uvicorn's protocol lets asyncio close
  the transport at the end of file, so an answer still on the worker threads
  (a body over ``--inline-body-bytes``) was dropped. A connection idle or in
  the middle of a request at its end of file is closed at once, as before.

uvicorn internals relied on, beside those of ``_read_timeouts``:
``limit_concurrency`` (read in ``on_headers_complete``), ``url`` (the request
target so far), ``flow.write_paused``, ``cycle`` (the latest request: its
``keep_alive``, ``more_body`` and ``response_complete``), ``eof_received``
(uvicorn's returns None: close) and ``shutdown()`` (called on each connection
when the listener closes).

Guarantees:
- Everything here runs on the event loop (protocol callbacks, timers and
  :meth:`Drain.start`, which the server schedules on the loop), so no lock.
- At most one write timer per connection; it never aborts a connection whose
  writer is not paused at that moment, nor one already closing or handed to
  another protocol.
- Once :meth:`Drain.start` has run, no response starts with keep-alive: those
  under way are marked at that moment, later ones at their headers.
- Bounded: the idle grace is one timer per connection, armed once; uvicorn's
  ``timeout_graceful_shutdown`` (``--drain-seconds``) closes whatever is left.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from asyncio import TimerHandle
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import ClassVar

from ._direct import DirectRoute
from ._read_timeouts import ReadTimeoutProtocol, ReadTimeouts, _address

__all__ = ["IDLE_GRACE_SECONDS", "PROBE_PATHS", "ConnectionRules", "Drain", "serving_protocol"]

IDLE_GRACE_SECONDS = 1.0
"""When the listener closes, how long an idle connection may still start a request."""

PROBE_PATHS = (b"/healthz", b"/readyz")
"""Request targets answered whatever the connection count (a query string allowed)."""

_PROBES = frozenset(PROBE_PATHS)

_RESET = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on with a zero timeout: closing sends a reset and frees the send buffer."""

_log = logging.getLogger("pineapple.server")


@dataclass
class Drain:
    """Whether the server drains: every response from now on closes its connection.

    One per server process, shared by its connections; :meth:`start` runs on the loop.
    """

    started: bool = False
    connections: Collection[object] = field(default_factory=set)
    """uvicorn's ``server_state.connections`` (bound at start, read by :meth:`start`)."""

    def start(self) -> None:
        """Close every connection after its current response (no response under way: next)."""
        self.started = True
        for connection in list(self.connections):  # bounded: the open connections
            if isinstance(connection, ServingProtocol):
                connection.drain()


@dataclass(frozen=True)
class ConnectionRules:
    """The write deadline and the probes' room, on top of the read deadlines."""

    write_seconds: float = 30.0
    """From a request's headers complete until its response is written (0: none)."""
    on_write_timeout: Callable[[], None] | None = None
    """Called on the event loop for each connection aborted by the write deadline."""


def serving_protocol(
    timeouts: ReadTimeouts, rules: ConnectionRules, drain: Drain, route: DirectRoute | None = None
) -> type[ServingProtocol]:
    """The HTTP protocol class to give ``uvicorn.Config(http=...)``.

    ``route``: small ``/execute`` requests are answered by the protocol
    (``server/http/_direct.py``); None sends every request to the app.
    """

    class _Bound(ServingProtocol):
        limits = timeouts
        connection_rules = rules
        server_drain = drain
        direct = route

    return _Bound


class ServingProtocol(ReadTimeoutProtocol):
    """The read deadlines plus drain, write deadline and probe room (see the module).

    Use :func:`serving_protocol`, which binds the class attributes.
    """

    connection_rules: ClassVar[ConnectionRules] = ConnectionRules()
    server_drain: ClassVar[Drain] = Drain()
    _headers_at = 0.0
    """Loop time at which the latest request's headers were complete."""
    _write_timer: TimerHandle | None = None
    _grace: TimerHandle | None = None

    def on_headers_complete(self) -> None:
        limit = self.limit_concurrency
        # uvicorn's own test, then (at the cap only) whether this is a probe.
        if self._at_connection_cap() and self._is_probe():
            self.limit_concurrency = None  # uvicorn's 503 past the cap skips probes
            try:
                super().on_headers_complete()
            finally:
                self.limit_concurrency = limit
        else:
            super().on_headers_complete()
        if self.connection_rules.write_seconds > 0:
            self._headers_at = self.loop.time()
        if self.server_drain.started:
            self._close_direct_after_answer()
            if self.cycle is not None:
                self.cycle.keep_alive = False

    def _is_probe(self) -> bool:
        target: bytes = self.url
        return target.partition(b"?")[0] in _PROBES

    # -- drain ------------------------------------------------------------------------------

    def drain(self) -> None:
        """Answer what is under way (and queued) with ``Connection: close``."""
        self._close_direct_after_answer()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
        for cycle, _app in self.pipeline:  # bounded: the requests queued on this connection
            cycle.keep_alive = False

    def shutdown(self) -> None:
        """The listener closed: answer a request under way; give an idle one a moment."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            self.drain()
            return
        if self._begun:  # a request's first bytes are here: answered, then closed
            return
        if self._grace is None:
            self._grace = self.loop.call_later(IDLE_GRACE_SECONDS, self._close_if_idle)

    def _close_if_idle(self) -> None:
        cycle = self.cycle
        idle = (cycle is None or cycle.response_complete) and not self._begun
        if idle and not self.transport.is_closing() and self.transport.get_protocol() is self:
            self.write_held()
            self.transport.close()

    # -- write deadline ---------------------------------------------------------------------

    def pause_writing(self) -> None:
        super().pause_writing()
        seconds = self.connection_rules.write_seconds
        if seconds > 0 and self._write_timer is None:
            when = self._headers_at + seconds if self._headers_at else self.loop.time() + seconds
            self._write_timer = self.loop.call_at(when, self._write_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_expired(self) -> None:
        self._write_timer = None
        transport = self.transport
        if not self.flow.write_paused or transport.get_protocol() is not self:
            return
        _log.warning(
            "%s: response not written within %.0f ms (the client does not read); "
            "connection aborted",
            _address(self.client),
            self.connection_rules.write_seconds * 1000,
        )
        sock = transport.get_extra_info("socket")
        if sock is not None:  # a reset, not a close: the kernel drops what it still holds
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        transport.abort()
        hook = self.connection_rules.on_write_timeout
        if hook is not None:
            hook()

    # -- half close -------------------------------------------------------------------------

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio's signature
        """The client shut down its write side: answer what it sent whole, then close.

        True (asyncio keeps the transport open for writing) while the latest
        request, received whole, is being answered; its answer says
        ``Connection: close`` and closes the transport. Otherwise None: closed now.
        """
        self.write_held()
        cycle = self.cycle
        if cycle is None or cycle.response_complete or cycle.more_body:
            return None  # idle, or a request that can no longer arrive whole
        cycle.keep_alive = False  # requests queued before it are answered first
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._write_timer, self._grace):
            if timer is not None:
                timer.cancel()
        self._write_timer = self._grace = None
        super().connection_lost(exc)
