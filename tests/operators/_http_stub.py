"""A downstream HTTP server in a thread, for ``transform_by_remote_pineapple``'s unit tests.

Each test gives it a ``reply(stub, body) -> Reply``; ``stub.release`` (an
Event, always set on close) unblocks replies that hold the connection, so a
stuck test cannot hang: every hold is ``release.wait(timeout)``.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

HOLD_MAX = 20.0  # seconds: no held reply outlives this, whatever the test does


@dataclass
class Reply:
    """What the stub sends: a status, headers and body parts (or an endless drip)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False  # wait for release before answering
    parts: Callable[[Stub], Iterator[bytes]] | None = None  # chunked body, part by part


class Stub:
    """``http://127.0.0.1:<port>``: records request bodies and connections."""

    def __init__(self, reply: Callable[[Stub, bytes], Reply]) -> None:
        self.reply = reply
        self.bodies: list[bytes] = []
        self.connections = 0
        self.release = threading.Event()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                stub.connections += 1
                super().setup()

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(size)  # bounded: the declared length
                stub.bodies.append(body)
                answer = stub.reply(stub, body)
                if answer.hold:
                    stub.release.wait(HOLD_MAX)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                try:
                    if answer.parts is None:
                        if "Content-Length" not in answer.headers:
                            self.send_header("Content-Length", str(len(answer.body)))
                        self.end_headers()
                        self.wfile.write(answer.body)
                        return
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for part in answer.parts(stub):  # bounded by the generator
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    self.close_connection = True  # the client went away: fine

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,))
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)
