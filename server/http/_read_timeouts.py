"""Header and body read timeouts: a client that sends slowly cannot hold a connection.

uvicorn bounds only the idle time between two requests of a connection
(``timeout_keep_alive``, our ``--idle-timeout-ms``). :func:`protocol_class`
gives uvicorn (``uvicorn.Config(http=...)``) a subclass of its httptools
protocol that bounds the reading of each request as well:

- ``--read-header-timeout-ms``: from the start of a request until its headers
  are complete;
- ``--read-timeout-ms``: from the same start until its body is complete.

A request starts at its first byte; the first request of a connection starts
when the connection is accepted, so a connection that never sends a byte is
closed at the header timeout too (the idle time between two requests is
uvicorn's keep-alive timeout). Past either deadline the connection is closed:
with a ``408 Request Timeout`` when the request has begun and nothing is being
answered on the connection, silently otherwise (a connection that never sent
a byte, or a response already started). Each close is counted
(``pineapple_http_read_timeouts_total{timeout}``) and logged with the peer's
address only. 0 disables a timeout; both 0 is uvicorn's own protocol. A
header timeout at or above the read timeout is the read timeout.

Why httptools only: ``http="auto"`` picks it (uvicorn[standard] always
installs it), and its parser calls the protocol at a request's first byte,
headers complete and message complete, so the timers cost nothing per chunk;
h11 has no such callbacks (its events would have to be inspected per chunk).

uvicorn internals relied on (``tests/server/http/test_read_timeouts.py`` fails
loudly when they change; the range is pinned and checked at start,
``server/http/_uvicorn_range.py``): ``HttpToolsProtocol`` and its
``loop``, ``transport``, ``client``, ``cycle`` (``response_started``,
``response_complete``), ``pipeline`` and ``server_state.default_headers``;
the parser callbacks ``on_message_begin``, ``on_headers_complete`` and
``on_message_complete``.

Guarantees:
- At most one timer per connection is alive, and it never fires after the
  current request's next deadline. A request usually costs no timer operation
  of its own: its start records the loop time and arms the timer only when
  none is alive or the alive one fires later than this request's deadline
  (after a body that outlasted the header timeout); its completion only
  clears the start. When the timer fires it reads the current request's
  start: between requests it ends; for a later request, or for the read
  deadline once the headers are complete, it re-arms itself; past the
  deadline it closes. Nothing is done per chunk of data; the connection's
  loss cancels the timer.
- All of this state is touched only on the event loop (protocol callbacks and
  the timer), so it needs no lock.
- A timer never writes to or closes a connection that is already closing or
  that this protocol no longer drives (an upgrade handed it to another one).
- The deadlines also run while the server itself does not read (uvicorn pauses
  reading a body the application has not consumed yet, or a pipelined request
  queued behind a running one); the defaults (10 s, 30 s) are far above those
  pauses, which ``--request-timeout-ms`` bounds for ``/execute``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from asyncio import TimerHandle
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from ._direct import TIMER_EARLY, DirectProtocol

__all__ = ["ReadTimeoutProtocol", "ReadTimeouts", "TimeoutKind", "protocol_class"]

TimeoutKind = Literal["header", "read"]
"""Which deadline closed a connection: the headers' or the whole request's."""

_log = logging.getLogger("pineapple.server")

_BODY = b"Request Timeout"


@dataclass(frozen=True)
class ReadTimeouts:
    """The two read deadlines of every request, in seconds (0: none)."""

    header_seconds: float = 10.0
    read_seconds: float = 30.0
    on_timeout: Callable[[TimeoutKind], None] | None = None
    """Called on the event loop for each connection closed by a deadline (a counter)."""

    @property
    def enabled(self) -> bool:
        """Whether either deadline is set (else uvicorn's own protocol serves)."""
        return self.header_seconds > 0 or self.read_seconds > 0

    @functools.cached_property
    def first_seconds(self) -> float:
        """Seconds from a request's start to its first deadline (infinity: none)."""
        return min((s for s in (self.header_seconds, self.read_seconds) if s > 0), default=math.inf)


def protocol_class(timeouts: ReadTimeouts) -> type[asyncio.Protocol]:
    """The HTTP protocol class to give ``uvicorn.Config(http=...)`` for ``timeouts``."""
    if not timeouts.enabled:
        return HttpToolsProtocol

    class _Bound(ReadTimeoutProtocol):
        limits = timeouts

    return _Bound


class ReadTimeoutProtocol(DirectProtocol):
    """uvicorn's httptools protocol with a header and a read deadline per request.

    Use :func:`protocol_class`, which binds ``limits``.
    """

    limits: ClassVar[ReadTimeouts] = ReadTimeouts()
    _timer: TimerHandle | None = None
    _timer_at = math.inf
    """When ``_timer`` fires (loop time); infinity when no timer is alive."""
    _started: float | None = None
    """Loop time at which the current request started; None between requests."""
    _begun = False
    """A byte of the current request has arrived (a 408 may answer it)."""
    _headers_done = False

    # -- uvicorn's protocol and parser callbacks ---------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_request()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, math.inf
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun = True
        if self._started is None:  # a later request (the first one started at accept)
            self._start_request()

    def on_headers_complete(self) -> None:
        self._headers_done = True
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._begun = False
        self._started = None

    # -- the deadlines ----------------------------------------------------------------------

    def _start_request(self) -> None:
        self._started = started = self.loop.time()
        self._headers_done = False
        when = started + self.limits.first_seconds
        if when < self._timer_at:  # none alive, or one for a later time
            self._arm(when)

    def _next_deadline(self, started: float) -> tuple[float, TimeoutKind] | None:
        """The current request's next deadline: the headers' until they are complete."""
        limits = self.limits
        if not self._headers_done and limits.header_seconds == limits.first_seconds:
            return started + limits.header_seconds, "header"
        if limits.read_seconds > 0:
            return started + limits.read_seconds, "read"
        return None

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_at(when, self._expire)
        self._timer_at = when

    def _expire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        started = self._started
        if started is None:
            return  # between requests: the next one arms again
        due = self._next_deadline(started)
        if due is None:
            return
        when, kind = due
        if when > self.loop.time() + TIMER_EARLY:  # a later request's, or the read deadline
            self._arm(when)
            return
        transport = self.transport
        if transport.is_closing() or transport.get_protocol() is not self:
            return
        self.write_held()  # answers ready before this request's deadline go first
        answered = self._begun and self._nothing_being_answered()
        if answered:
            transport.write(self._response_408())
        transport.close()
        self._report(kind, answered)

    def _nothing_being_answered(self) -> bool:
        """Whether a 408 may be written now: no response of this connection is under way."""
        if self._direct_under_way():  # begun, headers complete, nothing written yet
            return True
        cycle: RequestResponseCycle | None = self.cycle  # None before the first request
        if cycle is None:
            return True
        if self._headers_done:  # ``cycle`` is this request's (queued if ``pipeline``)
            return not self.pipeline and not cycle.response_started
        return cycle.response_complete  # ``cycle`` is the previous request's

    def _response_408(self) -> bytes:
        content = [STATUS_LINE[408]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: text/plain; charset=utf-8\r\n",
                b"content-length: %d\r\n" % len(_BODY),
                b"connection: close\r\n\r\n",
                _BODY,
            ]
        )
        return b"".join(content)

    def _report(self, kind: TimeoutKind, answered: bool) -> None:
        peer = _address(self.client)
        limits = self.limits
        seconds = limits.header_seconds if kind == "header" else limits.read_seconds
        what = "headers" if kind == "header" else "request"
        if self._begun:
            _log.warning(
                "%s: %s not complete within %.0f ms; connection closed%s",
                peer,
                what,
                seconds * 1000,
                " with 408" if answered else "",
            )
        else:
            _log.info("%s: no request within %.0f ms; connection closed", peer, seconds * 1000)
        if limits.on_timeout is not None:
            limits.on_timeout(kind)


def _address(client: tuple[str, int] | None) -> str:
    """``host:port`` of the peer (``[v6]:port``); the only thing said of a cut client."""
    if client is None:
        return "unknown peer"
    host, port = client
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
