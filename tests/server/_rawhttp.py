"""A raw HTTP/1.1 client on one socket, for tests that must see exactly what a connection does.

http.client and httpx retry, pool and reconnect on their own; these tests
count resets, refusals and ``Connection: close`` themselves.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

__all__ = ["Answer", "RawConnection"]

_HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def closes(self) -> bool:
        """The server said it closes the connection after this response."""
        return self.headers.get("connection", "").lower() == "close"


class RawConnection:
    """One TCP connection to ``host:port``; every read has the socket's timeout."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._buffer = b""

    def send(self, method: str, path: str, body: bytes = b"") -> None:
        head = f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n\r\n"
        self.sock.sendall(head.encode() + body)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the connection before a full response")
        self._buffer += chunk

    def read(self) -> Answer:
        """The next response (``EOFError`` if the connection ends before it is whole)."""
        # Bounded: the head by _HEAD_LIMIT, the body by its Content-Length.
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > _HEAD_LIMIT:
                raise AssertionError("response head too long")
            self._fill()
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        self._buffer = rest
        while len(self._buffer) < length:
            self._fill()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return Answer(status, headers, body)

    def ask(self, method: str, path: str, body: bytes = b"") -> Answer:
        self.send(method, path, body)
        return self.read()

    def close(self) -> None:
        self.sock.close()
