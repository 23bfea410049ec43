"""A TCP forwarder on loopback: a way to stop a shared server for one benchmark's clients only.

The fleet benchmark points its producer at MariaDB through a forwarder and
stops the forwarder to show a pod starting with its database gone, without
stopping the machine's MariaDB that other clients use.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

__all__ = ["Forwarder", "forwarder"]

CHUNK = 65536
MAX_CONNECTIONS = 64
"""Connections held at once; one more is closed at accept (bounded threads)."""


class Forwarder:
    """Accepts on ``127.0.0.1:port`` and pipes each connection to ``target``; ``stop`` cuts all.

    Guarantees: ``_open`` is changed under ``_lock``; after ``stop`` returns, the
    listener is closed and every piped socket is shut down, so a client sees its
    server gone at once (its next read ends), as when the server stops.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stopped = False
        threading.Thread(target=self._accept, name="forwarder", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._stopped or len(self._open) >= 2 * MAX_CONNECTIONS:
                    client.close()
                    upstream.close()
                    continue
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(CHUNK):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        """Close the listener and cut every connection (idempotent)."""
        with self._lock:
            self._stopped = True
            held, self._open = self._open, set()
        self._listener.close()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@contextlib.contextmanager
def forwarder(host: str, port: int) -> Iterator[Forwarder]:
    """A running :class:`Forwarder` to ``host:port``, stopped on exit."""
    fwd = Forwarder((host, port))
    try:
        yield fwd
    finally:
        fwd.stop()
