"""The shutdown a rolling update needs: not ready at once, accept a while longer, then drain.

In a cluster, new connections keep arriving for a few seconds after SIGTERM,
until every load balancer has seen the endpoint go. :class:`GracefulServer`
(uvicorn's server) therefore ends in three steps:

1. **SIGTERM**: ``/readyz`` answers 503 ``draining`` at once
   (``Service.draining``), and every response from then on carries
   ``Connection: close`` (``server/http/_connections.py``'s :class:`Drain`), so
   keep-alive clients reconnect instead of meeting a reset. A config reload
   in progress is cancelled (``Reloader.cancel``, on a thread of its own: its
   fetches in flight are cancelled, a MySQL query killed) and no later one
   applies, so shutdown never waits for a slow fetch. The listener
   keeps accepting for ``--shutdown-delay-seconds``, the time load balancers
   take to stop sending new connections.
2. **The delay is over** (or a second SIGTERM, or SIGINT, which skips the
   delay): the listener closes. Connections the kernel had already accepted
   but the loop had not yet taken are taken first (from a duplicate of the
   listening socket, until it has none, without yielding to the loop) rather
   than reset by the close. A connection still arriving at that instant can
   meet the close (TCP has no way to stop a listener gently): the delay is
   there so that none does.
3. **Drain**: requests under way finish within ``--drain-seconds``
   (uvicorn's ``timeout_graceful_shutdown``); the service then stops within
   what is left of that time; the process exits 0 at most 2 s later
   (``exit_within``): delay + drain + 2 s after SIGTERM at most.

Signal handlers only set flags and schedule :meth:`Drain.start` on the loop
(``call_soon_threadsafe``); everything else runs on the loop. uvicorn
internals relied on: ``handle_exit`` (its signal handler),
``_captured_signals``, ``on_tick`` (every 0.1 s), ``shutdown``, ``servers``,
``server_state`` and ``lifespan.state``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from types import FrameType

import uvicorn

from .._service import Service
from ._connections import Drain

__all__ = ["GracefulServer"]

_log = logging.getLogger("pineapple.server")


class GracefulServer(uvicorn.Server):
    """uvicorn's server with the shutdown of the module docstring."""

    def __init__(
        self, config: uvicorn.Config, service: Service, drain: Drain, delay_seconds: float
    ) -> None:
        super().__init__(config)
        self._service = service
        self._drain = drain
        self._delay = delay_seconds
        self._close_at: float | None = None
        """Monotonic time at which the listener closes; None until the first signal."""
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self._loop = asyncio.get_running_loop()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        loop = self._loop
        if self._close_at is not None or loop is None or self.should_exit:
            super().handle_exit(sig, frame)  # a second signal, or not serving yet: now
            return
        self._service.draining = True  # /readyz: 503 from the next request on
        self._captured_signals.append(sig)
        delay = self._delay if sig == signal.SIGTERM else 0.0
        self._close_at = time.monotonic() + delay
        loop.call_soon_threadsafe(self._begin, signal.Signals(sig).name, delay)

    def _begin(self, name: str, delay: float) -> None:
        self._drain.start()
        threading.Thread(
            target=self._service.reloader.cancel, name="pineapple-cancel-reload", daemon=True
        ).start()
        _log.info("%s: not ready; accepting for %.1f s more, then draining", name, delay)

    async def on_tick(self, counter: int) -> bool:
        if await super().on_tick(counter):
            return True
        close_at = self._close_at
        return close_at is not None and time.monotonic() >= close_at

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        drain_seconds = self._service.config.drain_seconds
        self._service.draining = True
        self._service.drain_deadline = time.monotonic() + drain_seconds
        self._drain.start()
        await self._stop_listening(sockets or [])
        _log.info("stopped accepting; draining (at most %.0f s)", drain_seconds)
        await super().shutdown(sockets)

    async def _stop_listening(self, sockets: list[socket.socket]) -> None:
        """Close the listener; take the connections the kernel accepted for it first.

        The queue is emptied without yielding to the loop, then the listener closes:
        a connection the kernel completes in between (microseconds) is the only one
        a close can reset; the accepted ones are handed to the loop afterwards.
        """
        spares = []
        for sock in sockets:
            with contextlib.suppress(OSError):
                spares.append(sock.dup())  # keeps the kernel's queue while the loop lets go
        for server in self.servers:
            server.close()
        for sock in sockets:
            sock.close()
        accepted: list[socket.socket] = []
        for spare in spares:
            with spare:
                spare.setblocking(False)
                # Bounded: the kernel queues at most `backlog` connections per listener.
                for _ in range(max(1, self.config.backlog)):
                    try:
                        conn, _peer = spare.accept()
                    except OSError:  # BlockingIOError: none left
                        break
                    accepted.append(conn)
        loop = asyncio.get_running_loop()
        config = self.config

        def create_protocol() -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state
            )

        for conn in accepted:  # bounded: what the queue held
            conn.setblocking(False)
            try:
                await loop.connect_accepted_socket(create_protocol, conn)
            except OSError:
                conn.close()
