"""Issue 21, item 11: idle and slow clients cannot take a pod's probes or hold a connection.

Real ``pineapple serve`` processes (one process, and ``--workers 2``, from one
parametrised fixture), raw sockets:

- the processes that accept filled to ``--max-connections`` with idle
  keep-alive connections: ``/healthz`` and ``/readyz`` are answered 200 (a
  liveness probe must not restart a healthy pod), by a process at its cap
  (the next request on the probe's connection, to ``/resources``, is 503);
- a client that reads its 6 MB response a few KB at a time is cut at
  ``--write-timeout-ms`` (it would otherwise hold the connection for minutes);
  with the write timeout off, the same client gets its whole response.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from ..._serve import Serve
from .._modes import MODES, WORKERS, serving
from .._rawhttp import RawConnection

pytestmark = pytest.mark.e2e

CAP = 4  # --max-connections
ATTEMPTS = 200  # bounds each loop of connections
REFUSED_STREAK = 20  # fresh connections refused in a row: the processes that accept are full
PROBES_SHOWN = 6  # probes answered by a process shown to be at its cap, per path
WRITE_MS = 1000  # --write-timeout-ms
ITEMS = [{"id": str(i), "tag": "x" * 1000} for i in range(6000)]  # answered back: ~6 MB
SLOW_READ_BYTES = 4096
SLOW_READ_SECONDS = 0.05  # a reader of ~80 KB/s: the 6 MB would take over a minute
LOG_WITHIN = 30.0
HELD_SECONDS = 3.0  # with no write timeout, the slow reader still holds its connection


def _address(server: Serve) -> tuple[str, int]:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@pytest.mark.parametrize("mode", MODES)
def test_probes_are_answered_past_the_connection_cap(mode: str, tmp_path: Path) -> None:
    args = ("--max-connections", str(CAP), "--idle-timeout-ms", "60000")
    with serving(mode, tmp_path, *args) as server:
        host, port = _address(server)
        held: dict[int, list[RawConnection]] = {}
        streak = 0
        try:
            # Fill: keep every connection answered 200 (open and idle, one of its process's
            # CAP) until REFUSED_STREAK fresh ones in a row are refused.
            for _ in range(ATTEMPTS):  # bounded: ATTEMPTS connections
                if streak == REFUSED_STREAK:
                    break
                conn = RawConnection(host, port)
                answer = conn.ask("GET", "/resources")
                if answer.status == 200:
                    held.setdefault(orjson.loads(answer.body)["worker"], []).append(conn)
                    streak = 0
                else:
                    assert answer.status == 503, answer
                    streak += 1
                    conn.close()
            else:
                raise AssertionError(f"never refused {REFUSED_STREAK} times in a row: {held}")
            # No process holds more than its CAP, and the refusals came from a full one. Which
            # process a fresh connection reaches is the kernel's choice (the workers share one
            # listening socket; an idle pod wakes the same one first), so the other may hold fewer.
            counts = {pid: len(c) for pid, c in held.items()}
            assert counts and max(counts.values()) == CAP, counts
            assert all(n <= CAP for n in counts.values()), counts
            assert len(held) <= WORKERS[mode]

            # A probe on a fresh connection is answered; a request that is no probe on the
            # same connection then is not: the probe was answered by a process at its cap.
            for path in ("/healthz", "/readyz", "/healthz?from=kubelet"):
                shown = 0
                for _ in range(ATTEMPTS):  # bounded: ATTEMPTS connections
                    if shown == PROBES_SHOWN:
                        break
                    conn = RawConnection(host, port)
                    try:
                        assert conn.ask("GET", path).status == 200, path
                        shown += conn.ask("GET", "/resources").status == 503
                    finally:
                        conn.close()
                assert shown == PROBES_SHOWN, path
        finally:
            for conns in held.values():
                for conn in conns:
                    conn.close()


def _slow_reader(host: str, port: int) -> tuple[socket.socket, bytes]:
    """A connection with a tiny receive window that has sent the 6 MB request."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_READ_BYTES)
    sock.settimeout(LOG_WITHIN)
    sock.connect((host, port))
    body = orjson.dumps({"common": {}, "items": ITEMS})
    head = f"POST /execute HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock, body


def _read_slowly(sock: socket.socket, got: bytearray, until: float, done: threading.Event) -> None:
    try:
        while time.monotonic() < until:  # bounded by until, and by the end of the stream
            chunk = sock.recv(SLOW_READ_BYTES)
            if not chunk:
                return
            got += chunk
            time.sleep(SLOW_READ_SECONDS)  # the slow client under test, not a wait for state
    except OSError:  # the abort: a reset
        return
    finally:
        done.set()


def _cut_lines(server: Serve) -> list[str]:
    return [line for line in server.log if "response not written within" in line]


def _declared_length(got: bytes | bytearray) -> tuple[int, int]:
    """(Content-Length, body bytes received) of the response in ``got``."""
    head, _, body = bytes(got).partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value), len(body)
    raise AssertionError(head[:500])


@pytest.mark.parametrize("mode", MODES)
def test_a_slow_reader_is_cut_at_the_write_timeout(mode: str, tmp_path: Path) -> None:
    with serving(mode, tmp_path, "--write-timeout-ms", str(WRITE_MS)) as server:
        host, port = _address(server)
        sent = time.monotonic()  # before the request's headers leave: the deadline's start
        sock, _ = _slow_reader(host, port)
        got = bytearray()
        done = threading.Event()
        reader = threading.Thread(
            target=_read_slowly, args=(sock, got, sent + LOG_WITHIN, done), daemon=True
        )
        reader.start()
        try:
            assert done.wait(LOG_WITHIN), "the connection was not cut"
            cut_after = time.monotonic() - sent
            reader.join(5)
        finally:
            sock.close()
        declared, received = _declared_length(got)
        assert received < declared / 2, (received, declared)
        assert WRITE_MS / 1000 <= cut_after < WRITE_MS / 1000 + 10, cut_after
        assert len(_cut_lines(server)) == 1, "".join(server.log)
        # The server still serves.
        conn = RawConnection(host, port)
        try:
            assert conn.ask("GET", "/healthz").status == 200
        finally:
            conn.close()


@pytest.mark.parametrize("mode", MODES)
def test_without_a_write_timeout_the_slow_reader_holds_on(mode: str, tmp_path: Path) -> None:
    with serving(mode, tmp_path, "--write-timeout-ms", "0") as server:
        host, port = _address(server)
        sock, body = _slow_reader(host, port)
        got = bytearray()
        done = threading.Event()
        reader = threading.Thread(
            target=_read_slowly,
            args=(sock, got, time.monotonic() + HELD_SECONDS, done),
            daemon=True,
        )
        reader.start()
        try:
            assert done.wait(HELD_SECONDS + 10)
            reader.join(5)
            # Still open after HELD_SECONDS, the response unfinished: now read the rest.
            sock.settimeout(LOG_WITHIN)
            declared, received = _declared_length(got)
            assert received < declared, (received, declared)
            while received < declared:  # bounded: by Content-Length and the socket timeout
                chunk = sock.recv(1 << 20)
                assert chunk, "the server closed the connection"
                received += len(chunk)
        finally:
            sock.close()
        assert received == declared and declared > len(body)
        assert _cut_lines(server) == []
