"""What a served connection may hold, and how it ends: drain, write deadline, probe room.

The rules the edge's protocol (``server/http/_protocol.py``) applies to every
connection beside the read deadlines of ``server/http/_read_timeouts.py``, as
plain objects and functions it composes:

- **Drain** (:class:`Drain`, started by ``server/http/_graceful.py`` on SIGTERM): from
  then on every response carries ``Connection: close`` and its connection is
  closed after it, so a keep-alive client learns to reconnect (elsewhere, once
  the endpoints have moved) instead of meeting a reset. When the listener
  closes, a connection idle between requests (or that never sent a byte) gets
  :data:`IDLE_GRACE_SECONDS` to start one more request, which is answered with
  ``Connection: close``; a connection whose request has begun is answered
  first. uvicorn would close an idle connection at once, resetting a request
  already on its way.
- **Write deadline** (:class:`WriteDeadline`; ``--write-timeout-ms``, Go's ``WriteTimeout``): from a
  request's headers complete until its response has been handed to the
  kernel. A write only waits when the client does not read (the transport
  pauses the writer past its high-water mark), so the deadline is checked
  then: a connection whose writer is still paused at the deadline is reset
  (``SO_LINGER`` 0, then ``abort``: its unsent bytes dropped, the kernel's
  send buffer too; ``close`` would wait for a reader that never comes) and
  logged with the peer's address only (:func:`abort_unread`).
- **Probe room** (:func:`is_probe`): ``/healthz`` and ``/readyz`` are answered past
  ``--max-connections`` (uvicorn answers every other request 503 there), so
  idle or slow clients filling the cap never make a liveness probe restart a
  healthy pod. A probe still needs a connection of its own: the cap bounds
  connections that *send requests*, not the accept queue.
- **Half close** (:func:`answer_after_eof`): a client that shuts down its
  write side (``shutdown(SHUT_WR)``,
  ``curl`` with a body from a pipe, some proxies) after a whole request still
  gets its answer, as HTTP/1.1 allows: at the end of file the transport stays
  open while the latest request, received whole, is answered (with
  ``Connection: close``), then closes. uvicorn's protocol lets asyncio close
  the transport at the end of file, so an answer still on the worker threads
  (a body over ``--inline-body-bytes``) was dropped. A connection idle or in
  the middle of a request at its end of file is closed at once, as before.

Guarantees:
- Everything here runs on the event loop (protocol callbacks, timers and
  :meth:`Drain.start`, which the server schedules on the loop), so no lock.
- At most one write timer per connection; the protocol aborts a connection
  only when its writer is still paused at the deadline, and never one already
  closing or handed to another protocol.
- Once :meth:`Drain.start` has run, no response starts with keep-alive: those
  under way are marked at that moment, later ones at their headers.
- Bounded: the idle grace is one timer per connection, armed once; uvicorn's
  ``timeout_graceful_shutdown`` (``--drain-seconds``) closes whatever is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from asyncio import TimerHandle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from ._read_timeouts import address

__all__ = [
    "IDLE_GRACE_SECONDS",
    "PROBE_PATHS",
    "ConnectionRules",
    "Drain",
    "Drainable",
    "WriteDeadline",
    "abort_unread",
    "answer_after_eof",
    "is_probe",
]

IDLE_GRACE_SECONDS = 1.0
"""When the listener closes, how long an idle connection may still start a request."""

PROBE_PATHS = (b"/healthz", b"/readyz")
"""Request targets answered whatever the connection count (a query string allowed)."""

_PROBES = frozenset(PROBE_PATHS)

_RESET = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on with a zero timeout: closing sends a reset and frees the send buffer."""

_log = logging.getLogger("pineapple.server")


class Drainable(Protocol):
    """A connection a drain reaches: it answers what is under way with ``Connection: close``."""

    def drain(self) -> None: ...


@dataclass
class Drain:
    """Whether the server drains: every response from now on closes its connection.

    One per server process, shared by its connections, which are in
    :attr:`connections` while they are open; :meth:`start` runs on the loop.
    """

    started: bool = False
    connections: set[Drainable] = field(default_factory=set)
    """The open connections (each adds itself at accept, removes itself when it ends)."""

    def start(self) -> None:
        """Close every connection after its current response (no response under way: next)."""
        self.started = True
        for connection in list(self.connections):  # bounded: the open connections
            connection.drain()


@dataclass(frozen=True)
class ConnectionRules:
    """The write deadline, on top of the read deadlines."""

    write_seconds: float = 30.0
    """From a request's headers complete until its response is written (0: none)."""
    on_write_timeout: Callable[[], None] | None = None
    """Called on the event loop for each connection aborted by the write deadline."""


class WriteDeadline:
    """One connection's write deadline: a timer armed while its writer is paused.

    The protocol calls :meth:`headers` at each request's headers,
    :meth:`paused`/:meth:`resumed` with the transport's flow control and
    :meth:`cancel` when the connection is lost; ``on_expired`` is called (on
    the loop) when the writer was paused past the deadline of the latest
    request's headers (or of the pause, before any).
    """

    __slots__ = ("_loop", "_on_expired", "_timer", "headers_at", "seconds")

    def __init__(
        self, seconds: float, loop: asyncio.AbstractEventLoop, on_expired: Callable[[], None]
    ) -> None:
        self.seconds = seconds
        self._loop = loop
        self._on_expired = on_expired
        self._timer: TimerHandle | None = None
        self.headers_at = 0.0
        """Loop time at which the latest request's headers were complete."""

    def headers(self) -> None:
        if self.seconds > 0:
            self.headers_at = self._loop.time()

    def paused(self) -> None:
        seconds = self.seconds
        if seconds > 0 and self._timer is None:
            at = self.headers_at
            when = at + seconds if at else self._loop.time() + seconds
            self._timer = self._loop.call_at(when, self._expire)

    def resumed(self) -> None:
        self.cancel()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        self._on_expired()


def abort_unread(
    transport: asyncio.Transport, client: tuple[str, int] | None, seconds: float
) -> None:
    """Reset a connection whose client does not read: its unsent bytes dropped, the
    kernel's send buffer too (``close`` would wait for a reader that never comes)."""
    _log.warning(
        "%s: response not written within %.0f ms (the client does not read); connection aborted",
        address(client),
        seconds * 1000,
    )
    sock = transport.get_extra_info("socket")
    if sock is not None:  # a reset, not a close: the kernel drops what it still holds
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    transport.abort()


def is_probe(target: bytes) -> bool:
    """Whether a request target is a probe's (answered past the connection cap)."""
    return target.partition(b"?")[0] in _PROBES


def answer_after_eof(cycle: RequestResponseCycle | None) -> bool:
    """At the client's end of file: whether the latest request (``cycle``) is still
    answered, then its connection closed (marked ``Connection: close`` here); False:
    idle, or a request that can no longer arrive whole, closed now."""
    if cycle is None or cycle.response_complete or cycle.more_body:
        return False
    cycle.keep_alive = False  # requests queued before it are answered first
    return True
