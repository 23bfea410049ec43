"""Issue 33, item 12: a client that shuts down its write side after a whole request still
gets its answer, on the app path (a body over ``--inline-body-bytes``) as on the direct
path, in one process and with ``--workers 2``; then the server closes the connection.
A request cut short by the end of file is not answered, and its connection is closed.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import orjson
import pytest

from .._rawhttp import RawConnection
from ..pod import Server
from .test_answer_size import CONFIG

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _connect(server: Server) -> RawConnection:
    host, port = server.addr.split(":")
    return RawConnection(host, int(port), timeout=30)


def _body(blob: int) -> bytes:
    return orjson.dumps({"common": {"blob": "x" * blob}, "items": [{}, {}]})


@pytest.mark.parametrize(
    "blob", [100, 100_000], ids=["direct path", "app path (over --inline-body-bytes)"]
)
def test_a_half_closed_client_gets_its_answer(blob: int, serve: Callable[..., Server]) -> None:
    server = serve(CONFIG)
    conn = _connect(server)
    try:
        conn.send("POST", "/execute", _body(blob))
        conn.sock.shutdown(socket.SHUT_WR)
        answer = conn.read()
        assert answer.status == 200
        assert orjson.loads(answer.body)["items"] == [{"copy": "x" * blob}] * 2
        with pytest.raises(EOFError):  # then the server closes the connection
            conn.read()
    finally:
        conn.close()


def test_two_pipelined_requests_are_both_answered(serve: Callable[..., Server]) -> None:
    server = serve(CONFIG)
    conn = _connect(server)
    try:
        conn.send("POST", "/execute", _body(100_000))
        conn.send("POST", "/execute", _body(200_000))
        conn.sock.shutdown(socket.SHUT_WR)
        first, second = conn.read(), conn.read()
        assert (first.status, second.status) == (200, 200)
        assert len(orjson.loads(second.body)["items"][0]["copy"]) == 200_000
        with pytest.raises(EOFError):
            conn.read()
    finally:
        conn.close()


def test_a_request_cut_short_is_closed_unanswered(serve: Callable[..., Server]) -> None:
    server = serve(CONFIG)
    conn = _connect(server)
    try:
        body = _body(100_000)
        head = f"POST /execute HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n\r\n"
        conn.sock.sendall(head.encode() + body[:1000])
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.sock.recv(65536) == b""  # closed (bounded by the socket's timeout)
    finally:
        conn.close()
    assert server.http.get("/healthz").status_code == 200
