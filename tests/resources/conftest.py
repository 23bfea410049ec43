"""Fixtures of the resource-type tests: a TCP proxy to take MariaDB, PostgreSQL or Redis
"down" and back."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target; ``down()`` cuts every connection, ``up()`` resumes.

    The port stays the same across ``down``/``up``, so a DSN pointing at the
    proxy sees the server vanish and come back.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.up()

    def up(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for sock in [*sockets, *([listener] if listener else [])]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def mysql_proxy(mysql_params: dict[str, Any]) -> Iterator[TcpProxy]:
    proxy = TcpProxy((mysql_params["host"], mysql_params["port"]))
    try:
        yield proxy
    finally:
        proxy.down()


@pytest.fixture
def pg_proxy(pg_params: dict[str, Any]) -> Iterator[TcpProxy]:
    proxy = TcpProxy((pg_params["host"], pg_params["port"]))
    try:
        yield proxy
    finally:
        proxy.down()


@pytest.fixture
def redis_proxy(redis_addr: str) -> Iterator[TcpProxy]:
    host, _, port = redis_addr.rpartition(":")
    proxy = TcpProxy((host, int(port)))
    try:
        yield proxy
    finally:
        proxy.down()
