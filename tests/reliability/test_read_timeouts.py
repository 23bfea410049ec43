"""Slow clients cannot hold the server: header and read timeouts, idle timeout, connection cap.

Real ``pineapple serve`` processes and raw sockets. A client that sends half
its headers, or trickles its body, is cut at ``--read-header-timeout-ms`` /
``--read-timeout-ms`` (408, then end of file) while ``/healthz`` keeps
answering; a large body sent at full speed is not; with both timeouts at 0
nothing fires; ``--idle-timeout-ms`` closes an idle keep-alive connection;
``--max-connections`` leaves ``/healthz`` answering below the cap and answers
503 beyond it; a worker of ``--workers 2`` applies the same timeouts.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from .._serve import Serve, run_cli
from ._reload import PLUGIN, valid

pytestmark = pytest.mark.e2e

HEADER_MS = 300
READ_MS = 1500
HALF_HEADERS = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Secret: hunter2\r\n"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n"


def _serve(tmp_path: Path, *args: str) -> Serve:
    config = tmp_path / "pineapple.json"
    config.write_bytes(valid("v0"))
    return Serve(config, "--plugin", PLUGIN, "--no-watch", *args)


@pytest.fixture
def timed(tmp_path: Path) -> Iterator[Serve]:
    serve = _serve(
        tmp_path, "--read-header-timeout-ms", str(HEADER_MS), "--read-timeout-ms", str(READ_MS)
    )
    try:
        yield serve
    finally:
        serve.close()


def _connect(serve: Serve) -> socket.socket:
    parts = urlsplit(serve.url)
    assert parts.hostname is not None and parts.port is not None
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return sock


def _until_eof(sock: socket.socket, within: float = 10.0) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and when it closed (monotonic)."""
    sock.settimeout(within)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic()


def _response(sock: socket.socket) -> bytes:
    """One whole response (head and ``content-length`` body), however it was split."""
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _length(data):
        chunk = sock.recv(65536)
        assert chunk, f"closed in the middle of a response: {data!r}"
        data += chunk
    return data


def _length(data: bytes) -> int:
    """The length of a response whose head ``data`` holds (head, blank line and body)."""
    head, _, _ = data.partition(b"\r\n\r\n")
    found = re.search(rb"content-length: (\d+)", head, re.I)
    return len(head) + 4 + (int(found.group(1)) if found else 0)


def _healthz(serve: Serve) -> bytes:
    """One ``GET /healthz`` on a new connection: the response's status line."""
    with _connect(serve) as sock:
        sock.sendall(HEALTHZ)
        sock.settimeout(5)
        return sock.recv(65536).split(b"\r\n", 1)[0]


def _status(serve: Serve, path: bytes) -> bytes:
    """One ``GET path`` on a new connection: the response's status line."""
    with _connect(serve) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: test\r\n\r\n")
        sock.settimeout(5)
        return sock.recv(65536).split(b"\r\n", 1)[0]


def _counter(serve: Serve, kind: str) -> float:
    with serve.new_client() as http:
        text = http.get("/metrics").text
    found = re.search(
        rf'^pineapple_http_read_timeouts_total{{timeout="{kind}"}} (\S+)$', text, re.M
    )
    return float(found.group(1)) if found else 0.0


@pytest.mark.timeout(60)
def test_half_headers_are_cut_at_the_header_timeout_while_healthz_answers(timed: Serve) -> None:
    with _connect(timed) as slow:
        port = slow.getsockname()[1]
        slow.sendall(HALF_HEADERS)
        sent = time.monotonic()
        assert _healthz(timed) == b"HTTP/1.1 200 OK"  # meanwhile
        data, closed = _until_eof(slow)
    assert data.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), data
    assert b"connection: close" in data
    assert HEADER_MS / 1000 * 0.8 <= closed - sent < 5.0
    line = timed.wait_line(rf"127\.0\.0\.1:{port}: headers not complete within {HEADER_MS} ms")
    assert "hunter2" not in line.string and "healthz" not in line.string  # the peer only
    assert _counter(timed, "header") == 1.0


@pytest.mark.timeout(60)
def test_a_connection_that_never_sends_is_closed_silently(timed: Serve) -> None:
    with _connect(timed) as idle:
        opened = time.monotonic()
        data, closed = _until_eof(idle)
    assert data == b""  # nothing was asked: no 408
    assert HEADER_MS / 1000 * 0.8 <= closed - opened < 5.0
    assert _counter(timed, "header") == 1.0


@pytest.mark.timeout(60)
def test_a_trickled_body_is_cut_at_the_read_timeout(timed: Serve) -> None:
    head = b"POST /execute HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n"
    with _connect(timed) as slow:
        started = time.monotonic()
        slow.sendall(head)
        sent = 0
        try:
            while sent < 1000 and time.monotonic() - started < 10:
                slow.sendall(b"x")  # 1 byte / 100 ms: 100 s for the whole body
                sent += 1
                time.sleep(0.1)
        except OSError:
            pass  # the server closed: the pipe broke or the peer reset
        try:
            data, closed = _until_eof(slow)
        except ConnectionResetError:
            data, closed = b"", time.monotonic()
    assert READ_MS / 1000 * 0.8 <= closed - started < READ_MS / 1000 + 3.0
    assert sent < 100
    if data:  # usually read before a reset
        assert data.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), data
    timed.wait_line(rf"request not complete within {READ_MS} ms; connection closed")
    assert _counter(timed, "read") == 1.0
    assert _healthz(timed) == b"HTTP/1.1 200 OK"


@pytest.mark.timeout(60)
def test_a_large_body_at_full_speed_is_not_cut(timed: Serve) -> None:
    pad = "x" * (8_000_000 - 100)
    body = orjson.dumps({"common": {"pad": pad}, "items": []})
    assert len(body) <= 8 * 1024 * 1024
    head = f"POST /execute HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n\r\n"
    with _connect(timed) as sock:
        sock.sendall(head.encode() + body)
        sock.settimeout(30)
        status = sock.recv(65536).split(b"\r\n", 1)[0]
    assert status == b"HTTP/1.1 200 OK"
    assert _counter(timed, "read") == 0.0 and _counter(timed, "header") == 0.0


@pytest.mark.timeout(60)
def test_with_both_timeouts_at_zero_nothing_fires(tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--read-header-timeout-ms", "0", "--read-timeout-ms", "0")
    try:
        with _connect(serve) as slow:
            slow.sendall(HALF_HEADERS)
            slow.settimeout(HEADER_MS / 1000 * 2)  # well past the would-be timeout
            with pytest.raises(TimeoutError):
                slow.recv(65536)
            slow.sendall(b"\r\n")  # the rest of the headers: still served
            slow.settimeout(5)
            assert slow.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
        assert _counter(serve, "header") == 0.0
    finally:
        serve.close()


@pytest.mark.timeout(60)
def test_the_idle_timeout_closes_a_keep_alive_connection(tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--idle-timeout-ms", "300")
    try:
        with _connect(serve) as sock:
            sock.sendall(HEALTHZ)
            assert _response(sock).startswith(b"HTTP/1.1 200 OK\r\n")
            answered = time.monotonic()
            data, closed = _until_eof(sock)
        assert data == b""
        assert 0.1 <= closed - answered < 4.0  # milliseconds reach uvicorn (5 s by default)
    finally:
        serve.close()


@pytest.mark.timeout(60)
def test_the_cap_th_connection_is_served_one_more_is_503_but_probes(tmp_path: Path) -> None:
    cap = 32
    serve = _serve(tmp_path, "--max-connections", str(cap))
    slow: list[socket.socket] = []
    try:
        for _ in range(cap - 1):
            slow.append(_connect(serve))
            slow[-1].sendall(HALF_HEADERS)
        assert _status(serve, b"/config") == b"HTTP/1.1 200 OK"  # the cap-th is served
        slow.append(_connect(serve))
        slow[-1].sendall(HALF_HEADERS)
        assert _status(serve, b"/config") == b"HTTP/1.1 503 Service Unavailable"  # one more
        assert _healthz(serve) == b"HTTP/1.1 200 OK"  # ...is, for the probes (issue 21.11)
    finally:
        for sock in slow:
            sock.close()
        serve.close()


@pytest.mark.timeout(90)
def test_workers_apply_the_same_timeouts(tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--workers", "2", "--read-header-timeout-ms", str(HEADER_MS))
    try:
        for _ in range(2):  # either worker may accept; each must cut it
            with _connect(serve) as slow:
                slow.sendall(HALF_HEADERS)
                sent = time.monotonic()
                data, closed = _until_eof(slow)
            assert data.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), data
            assert closed - sent < 5.0
    finally:
        serve.close()


@pytest.mark.parametrize(
    "flag",
    ["--read-header-timeout-ms", "--read-timeout-ms", "--idle-timeout-ms", "--max-connections"],
)
def test_serve_refuses_a_negative_bound(flag: str) -> None:
    done = run_cli("serve", "missing.json", flag, "-1", timeout=30)
    assert done.returncode == 2
    assert f"{flag} must be >= 0" in done.stderr
