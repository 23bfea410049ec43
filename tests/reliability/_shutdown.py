"""Helper of the shutdown tests: a TCP proxy in front of MariaDB.

The proxy lets a test make the database slow or unreachable for new
connections only, without touching the shared MariaDB:

- ``pass``: bytes flow both ways as they come;
- ``trickle``: the server's bytes reach the client ``TRICKLE_BYTES`` per
  ``TRICKLE_SECONDS`` (a load that would take minutes); ``streaming`` is set
  once a trickled connection has carried ``STREAMING_BYTES``;
- ``stall``: a new connection is accepted and held, nothing forwarded (a
  black hole); ``held`` is set when one arrives.

The mode applies to open connections too (a kept connection is reused by the
next refresh): ``stall`` stops forwarding in both directions and sets
``held`` once a client sends into the hole. Every thread ends on ``close()``:
each wait has a timeout and each loop checks ``_closed``.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from typing import Literal

Mode = Literal["pass", "trickle", "stall"]

TRICKLE_BYTES = 512
TRICKLE_SECONDS = 0.02
STREAMING_BYTES = 32 * 1024
_POLL = 0.1  # every wait of the proxy for input returns at least this often
_SEND_SECONDS = 10.0  # a client that reads nothing for this long loses its connection


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``upstream``; see the module docstring for the modes."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.mode: Mode = "pass"
        self.streaming = threading.Event()
        self.held = threading.Event()
        self._closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL)
        self.port: int = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _keep(self, sock: socket.socket) -> socket.socket:
        sock.settimeout(_SEND_SECONDS)
        with self._lock:
            self._sockets.append(sock)
        return sock

    def _accept(self) -> None:
        while not self._closed.is_set():  # bounded by close()
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            mode = self.mode
            self._keep(client)
            if mode == "stall":
                self.held.set()
                continue  # held open, never answered, until close()
            upstream = self._keep(socket.create_connection(self.upstream, timeout=5))
            self._spawn(self._pump, client, upstream, True)
            self._spawn(self._pump, upstream, client, False)

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        carried = 0
        while not self._closed.is_set():  # bounded by close() and by EOF
            mode = self.mode
            trickle = mode == "trickle" and not from_client
            try:
                if not select.select([src], [], [], _POLL)[0]:
                    continue
                if mode == "stall":
                    if from_client:
                        self.held.set()  # a request went into the hole
                    self._closed.wait(_POLL)
                    continue
                data = src.recv(TRICKLE_BYTES if trickle else 65536)
            except (OSError, ValueError):  # ValueError: closed under select
                break
            if not data:
                break
            try:
                dst.sendall(data)
            except OSError:
                break
            if trickle:
                carried += len(data)
                if carried >= STREAMING_BYTES:
                    self.streaming.set()
                self._closed.wait(TRICKLE_SECONDS)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        with self._lock:
            threads, sockets = list(self._threads), list(self._sockets)
        for thread in threads:
            thread.join(5)
        for sock in sockets:
            sock.close()
