"""Request bodies in progress are bounded in total (``--max-inflight-body-bytes``).

Real ``pineapple serve`` processes and raw sockets. One client holds part of a
large body open; a second request whose body would pass the cap gets 503 at
once; once the first finishes, or its client goes away mid-body, the bytes are
released and the same request is served (no leak of the count).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .._serve import Serve
from ._reload import PLUGIN, valid

pytestmark = pytest.mark.e2e

CAP = 800_000
HELD = 400_000  # what the slow client has sent of its body
SECOND = 500_000  # HELD + SECOND passes CAP; SECOND alone does not


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    config = tmp_path / "pineapple.json"
    config.write_bytes(valid("v0"))
    server = Serve(
        config,
        "--plugin",
        PLUGIN,
        "--no-watch",
        "--max-body-bytes",
        "600000",
        "--max-inflight-body-bytes",
        str(CAP),
    )
    try:
        yield server
    finally:
        server.close()


def _body(size: int) -> bytes:
    """A valid request of exactly ``size`` bytes (JSON allows trailing white space)."""
    head = b'{"common": {}, "items": []}'
    return head + b" " * (size - len(head))


def _connect(serve: Serve) -> socket.socket:
    parts = urlsplit(serve.url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _head(size: int) -> bytes:
    return (
        b"POST /execute HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % size
    )


def _status(sock: socket.socket) -> int:
    sock.settimeout(10)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a status line: {data!r}"
        data += chunk
    return int(data.split(b" ", 2)[1])


def _post(serve: Serve, size: int) -> int:
    with _connect(serve) as sock:
        sock.sendall(_head(size) + _body(size))
        return _status(sock)


def _until(serve: Serve, size: int, want: int, within: float = 10.0) -> int:
    """POST a ``size``-byte body until it answers ``want`` (bounded by ``within`` seconds)."""
    deadline = time.monotonic() + within
    status = _post(serve, size)
    while status != want and time.monotonic() < deadline:
        time.sleep(0.05)
        status = _post(serve, size)
    return status


def test_a_body_that_would_pass_the_cap_gets_503_until_the_held_one_is_answered(
    serve: Serve,
) -> None:
    assert _post(serve, SECOND) == 200  # alone, it fits
    with _connect(serve) as slow:
        slow.sendall(_head(HELD + 100) + _body(HELD + 100)[:HELD])
        # Once the server has read the slow client's bytes, the second body passes the cap.
        assert _until(serve, SECOND, 503) == 503
        assert _post(serve, 1_000) == 200  # a small body still fits beside it
        slow.sendall(_body(HELD + 100)[HELD:])
        assert _status(slow) == 200
    assert _until(serve, SECOND, 200) == 200


def test_a_client_gone_mid_body_releases_its_bytes(serve: Serve) -> None:
    slow = _connect(serve)
    try:
        slow.sendall(_head(HELD + 100) + _body(HELD + 100)[:HELD])
        assert _until(serve, SECOND, 503) == 503
    finally:
        slow.close()
    # The count went back down: the same body is served again (not 503 for ever).
    assert _until(serve, SECOND, 200) == 200


def test_zero_turns_the_cap_off(tmp_path: Path) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(valid("v0"))
    server = Serve(config, "--plugin", PLUGIN, "--no-watch", "--max-inflight-body-bytes", "0")
    try:
        with _connect(server) as slow:
            slow.sendall(_head(HELD + 100) + _body(HELD + 100)[:HELD])
            time.sleep(0.3)  # would be read by now; with no cap nothing can refuse
            assert _post(server, SECOND) == 200
    finally:
        server.close()
