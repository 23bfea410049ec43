"""Helpers of the deadline / large-request tests: a ``pineapple serve`` with this plugin, a
pausable proxy.

Also a ``--plugin`` for the server process: importing this module registers
``test_inline_gate``, an operator that does *not* declare blocking I/O (so a
small request runs it on the event loop) and holds the request until
``<folder>/go`` exists (bounded by ``file_gate``'s own 20 s timeout).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading
from pathlib import Path
from typing import Any

from pineapple import ParamSpec
from tests._operators import register_test_operator
from tests.server.process_plugin import FileGateOperator

from .._serve import Serve

PLUGIN = "tests.reliability._deadline"


register_test_operator(
    "test_inline_gate",
    FileGateOperator,  # the same gate, registered without blocking=True: it runs inline
    "holds a request until a file appears (not blocking).",
    params={"folder": ParamSpec(type="string", required=True)},
)


def pipeline_config(operators: dict[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A unified config running ``operators`` in order as the main group."""
    return {
        "pipeline_config": {"operators": operators},
        "pipeline_group": {"main": {"pipeline": list(operators)}},
        **extra,
    }


class DeadlineServe(Serve):
    """``pineapple serve CONFIG --plugin tests.reliability._deadline --no-watch ARGS...``."""

    def __init__(self, config: Path, *args: str) -> None:
        super().__init__(config, "--plugin", PLUGIN, "--no-watch", *args)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far (Linux)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PausableProxy:
    """A TCP proxy on a free loopback port in front of ``upstream``; ``pause()`` holds traffic.

    While paused it keeps accepting and reading but forwards nothing, as a
    stopped (SIGSTOPped) Redis looks to its clients; ``resume()`` forwards
    what was held. One selector thread serves every connection.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.addr = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._paused = threading.Event()
        self._stop = threading.Event()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        # Per socket: its peer and the bytes held for that peer while paused.
        self._held: dict[socket.socket, bytearray] = {}
        self._peer: dict[socket.socket, socket.socket] = {}
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def _serve(self) -> None:
        # Bounded by close(): every select waits at most 50 ms, then re-checks _stop.
        while not self._stop.is_set():
            for key, _ in self._sel.select(0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept()
                else:
                    self._pump(sock)
            if not self._paused.is_set():
                self._flush()

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        upstream = socket.create_connection(self._upstream, timeout=5)
        for a, b in ((client, upstream), (upstream, client)):
            a.setblocking(False)
            self._peer[a] = b
            self._held[b] = bytearray()
            self._sel.register(a, selectors.EVENT_READ, None)

    def _pump(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(sock)
            return
        self._held[self._peer[sock]] += data

    def _flush(self) -> None:
        for sock, held in list(self._held.items()):
            if held:
                try:
                    sock.setblocking(True)
                    sock.sendall(held)
                    sock.setblocking(False)
                except OSError:
                    self._drop(sock)
                    continue
                held.clear()

    def _drop(self, sock: socket.socket) -> None:
        peer = self._peer.pop(sock, None)
        for s in (sock, peer):
            if s is None:
                continue
            self._held.pop(s, None)
            self._peer.pop(s, None)
            with contextlib.suppress(KeyError, ValueError):  # never registered, or closed
                self._sel.unregister(s)
            s.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in list(self._peer):
            self._drop(sock)
        self._sel.close()
        self._listener.close()
