"""Issue 21, item 9: ``pineapple admin`` talks to ``--addr`` only, and says when nothing was done.

A loopback HTTP server answers the admin request with a redirect to another
loopback host (127.0.0.2) that records what reaches it: the command must not
follow it (no request, no token there) and must exit 1. The same recorder
set as ``http_proxy`` must see nothing either.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ..._serve import cli_env, run_cli

pytestmark = pytest.mark.timeout(120)

TOKEN = "admin-token-5e1f0c"


class Recorder:
    """What one test server received: (method, path, Authorization header) per request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, str | None]] = []

    def add(self, method: str, path: str, auth: str | None) -> None:
        with self.lock:
            self.seen.append((method, path, auth))


@contextmanager
def http_server(
    host: str, answer: Callable[[BaseHTTPRequestHandler], None]
) -> Iterator[tuple[str, Recorder]]:
    """A threaded HTTP server on ``host`` port 0: ``(host:port, recorder)``; stopped after."""
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(min(length, 1 << 16))  # bounded: our client sends an empty body
            recorder.add(self.command, self.path, self.headers.get("Authorization"))
            answer(self)

        do_GET = do_POST = do_PUT = _any

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{host}:{server.server_address[1]}", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10.0)


def _reply(status: int, body: bytes = b"{}", **headers: str) -> Callable[..., None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name.replace("_", "-"), value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def _admin(addr: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = cli_env({"PINEAPPLE_ADMIN_TOKEN": TOKEN, **env}, drop=("no_proxy", "NO_PROXY"))
    return run_cli(
        "admin", "refresh", "feed", "--addr", addr, "--timeout", "10", env=full, timeout=60
    )


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_exits_1(status: int) -> None:
    with (
        http_server("127.0.0.2", _reply(200, b'{"result": "refreshed"}')) as (other, stolen),
        http_server("127.0.0.1", _reply(status, b"moved", Location=f"http://{other}/steal")) as (
            addr,
            asked,
        ),
    ):
        done = _admin(addr)
    assert done.returncode == 1, done.stdout + done.stderr
    assert stolen.seen == []  # the other host got no request, so no token
    assert asked.seen == [("POST", "/admin/resources/feed/refresh", f"Bearer {TOKEN}")]
    assert TOKEN not in done.stdout + done.stderr


def test_an_http_proxy_from_the_environment_is_not_used() -> None:
    with (
        http_server("127.0.0.2", _reply(200, b'{"result": "refreshed"}')) as (proxy, via),
        http_server("127.0.0.1", _reply(200, b'{"result": "refreshed"}')) as (addr, asked),
    ):
        done = _admin(addr, http_proxy=f"http://{proxy}", HTTP_PROXY=f"http://{proxy}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert via.seen == []
    assert [auth for _, _, auth in asked.seen] == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize(("status", "code"), [(200, 0), (204, 0), (409, 1), (500, 1)])
def test_the_exit_code_is_0_on_2xx_only(status: int, code: int) -> None:
    body = b"" if status == 204 else b'{"result": "x"}'
    with http_server("127.0.0.1", _reply(status, body)) as (addr, asked):
        done = _admin(addr)
    assert done.returncode == code, done.stdout + done.stderr
    assert len(asked.seen) == 1
