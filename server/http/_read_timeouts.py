"""Header and body read timeouts: a client that sends slowly cannot hold a connection.

uvicorn bounds only the idle time between two requests of a connection
(``timeout_keep_alive``, our ``--idle-timeout-ms``). :class:`ReadDeadline`,
which the edge's protocol (``server/http/_protocol.py``) keeps per
connection, bounds the reading of each request as well:

- ``--read-header-timeout-ms``: from the start of a request until its headers
  are complete;
- ``--read-timeout-ms``: from the same start until its body is complete.

A request starts at its first byte; the first request of a connection starts
when the connection is accepted, so a connection that never sends a byte is
closed at the header timeout too (the idle time between two requests is
uvicorn's keep-alive timeout). Past either deadline the protocol closes the
connection: with a ``408 Request Timeout`` (:func:`response_408`) when the
request has begun and nothing is being answered on the connection, silently
otherwise (a connection that never sent a byte, or a response already
started). Each close is counted (``pineapple_http_read_timeouts_total{timeout}``)
and logged with the peer's address only (:func:`report_timeout`). 0 disables a
timeout. A header timeout at or above the read timeout is the read timeout.

Why httptools only: ``http="auto"`` picks it (uvicorn[standard] always
installs it), and its parser calls the protocol at a request's first byte,
headers complete and message complete, so the timers cost nothing per chunk;
h11 has no such callbacks (its events would have to be inspected per chunk).

Guarantees:
- At most one timer per connection is alive, and it never fires after the
  current request's next deadline. A request usually costs no timer operation
  of its own: its start records the loop time and arms the timer only when
  none is alive or the alive one fires later than this request's deadline
  (after a body that outlasted the header timeout); its completion only
  clears the start. When the timer fires it reads the current request's
  start: between requests it ends; for a later request, or for the read
  deadline once the headers are complete, it re-arms itself; past the
  deadline it calls the connection's ``on_expired``. Nothing is done per
  chunk of data; :meth:`ReadDeadline.cancel` (the connection's loss) cancels
  the timer.
- All of this state is touched only on the event loop (protocol callbacks and
  the timer), so it needs no lock.
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
from typing import Literal

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

__all__ = [
    "TIMER_EARLY",
    "ReadDeadline",
    "ReadTimeouts",
    "TimeoutKind",
    "address",
    "report_timeout",
    "response_408",
]

TimeoutKind = Literal["header", "read"]
"""Which deadline closed a connection: the headers' or the whole request's."""

TIMER_EARLY = 0.001
"""A timer may fire this much before its time (uvloop rounds delays to milliseconds)."""

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
        """Whether either deadline is set."""
        return self.header_seconds > 0 or self.read_seconds > 0

    @functools.cached_property
    def first_seconds(self) -> float:
        """Seconds from a request's start to its first deadline (infinity: none)."""
        return min((s for s in (self.header_seconds, self.read_seconds) if s > 0), default=math.inf)


class ReadDeadline:
    """One connection's read deadlines (see the module): one timer, re-armed as needed.

    The protocol calls :meth:`start` at accept, :meth:`begin` at each request's
    first byte, sets :attr:`headers_done` at its headers, calls :meth:`complete`
    at its end and :meth:`cancel` when the connection is lost; ``on_expired``
    is called (on the loop) when the current request passes a deadline.
    """

    __slots__ = (
        "_loop",
        "_on_expired",
        "_timer_at",
        "begun",
        "headers_done",
        "limits",
        "started",
        "timer",
    )

    def __init__(
        self,
        limits: ReadTimeouts,
        loop: asyncio.AbstractEventLoop,
        on_expired: Callable[[TimeoutKind], None],
    ) -> None:
        self.limits = limits
        self._loop = loop
        self._on_expired = on_expired
        self.timer: TimerHandle | None = None
        self._timer_at = math.inf
        """When ``timer`` fires (loop time); infinity when no timer is alive."""
        self.started: float | None = None
        """Loop time at which the current request started; None between requests."""
        self.begun = False
        """A byte of the current request has arrived (a 408 may answer it)."""
        self.headers_done = False

    def start(self) -> None:
        """A request starts (the connection's first at accept, later ones at their first byte)."""
        self.started = started = self._loop.time()
        self.headers_done = False
        when = started + self.limits.first_seconds
        if when < self._timer_at:  # none alive, or one for a later time
            self._arm(when)

    def begin(self) -> None:
        """The current request's first byte."""
        self.begun = True
        if self.started is None:  # a later request (the first one started at accept)
            self.start()

    def complete(self) -> None:
        """The current request is received whole: no deadline runs until the next one."""
        self.begun = False
        self.started = None

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer, self._timer_at = None, math.inf

    def seconds(self, kind: TimeoutKind) -> float:
        return self.limits.header_seconds if kind == "header" else self.limits.read_seconds

    def _next_deadline(self, started: float) -> tuple[float, TimeoutKind] | None:
        """The current request's next deadline: the headers' until they are complete."""
        limits = self.limits
        if not self.headers_done and limits.header_seconds == limits.first_seconds:
            return started + limits.header_seconds, "header"
        if limits.read_seconds > 0:
            return started + limits.read_seconds, "read"
        return None

    def _arm(self, when: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self._loop.call_at(when, self._expire)
        self._timer_at = when

    def _expire(self) -> None:
        self.timer, self._timer_at = None, math.inf
        started = self.started
        if started is None:
            return  # between requests: the next one arms again
        due = self._next_deadline(started)
        if due is None:
            return
        when, kind = due
        if when > self._loop.time() + TIMER_EARLY:  # a later request's, or the read deadline
            self._arm(when)
            return
        self._on_expired(kind)


def response_408(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """The 408 a timed-out request gets (uvicorn's default headers, ``Connection: close``)."""
    content = [STATUS_LINE[408]]
    for name, value in default_headers:
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


def report_timeout(
    deadline: ReadDeadline, kind: TimeoutKind, client: tuple[str, int] | None, answered: bool
) -> None:
    """Log a connection closed by ``kind`` (the peer's address only) and count it."""
    peer = address(client)
    seconds = deadline.seconds(kind)
    what = "headers" if kind == "header" else "request"
    if deadline.begun:
        _log.warning(
            "%s: %s not complete within %.0f ms; connection closed%s",
            peer,
            what,
            seconds * 1000,
            " with 408" if answered else "",
        )
    else:
        _log.info("%s: no request within %.0f ms; connection closed", peer, seconds * 1000)
    if deadline.limits.on_timeout is not None:
        deadline.limits.on_timeout(kind)


def address(client: tuple[str, int] | None) -> str:
    """``host:port`` of the peer (``[v6]:port``); the only thing said of a cut client."""
    if client is None:
        return "unknown peer"
    host, port = client
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
