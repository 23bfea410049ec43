"""A ``nats-server -js`` of the benchmark's own, on a free loopback port, stopped on exit."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ._procs import stop

__all__ = ["NatsServer", "nats_server", "nats_unavailable"]

READY_SECONDS = 10.0
"""How long a started server may take to accept connections."""


def nats_unavailable() -> str | None:
    """None when ``nats-server`` is installed, else why the fleet rows cannot run."""
    return None if shutil.which("nats-server") else "nats-server is not installed"


class NatsServer:
    """One ``nats-server -js`` process: its URL, and stop/start around the same store dir."""

    def __init__(self, port: int, store: Path, log: Path) -> None:
        self.port = port
        self.url = f"nats://127.0.0.1:{port}"
        self._store = store
        self._log = log
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait (at most READY_SECONDS) until it accepts connections."""
        cmd = ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port)]
        cmd += ["-sd", str(self._store)]
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=log)
        deadline = time.monotonic() + READY_SECONDS
        while True:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 1),
            ):
                return
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nats-server on port {self.port} did not start: {self._tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop(proc, 10)

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return self._log.read_text(errors="replace")[-1000:]
        return ""


@contextlib.contextmanager
def nats_server(port: int) -> Iterator[NatsServer]:
    """A started JetStream server on ``port`` with a store of its own (removed on exit)."""
    with tempfile.TemporaryDirectory(prefix="pineapple-bench-nats-") as folder:
        server = NatsServer(port, Path(folder) / "js", Path(folder) / "nats.log")
        server.start()
        try:
            yield server
        finally:
            server.stop()
