"""Helpers of the reload/config-path/proxy reliability tests: a real ``pineapple serve``.

Every wait here has a deadline: the server's stderr is read on a thread and
tests wait on a condition for a line, never on a blocking read.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.server.fakes import dump, items_resource, unified_config

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.server.process_plugin"
CLI = "import sys; from pineapple.cli import main; sys.exit(main())"


def valid(tag: str) -> bytes:
    """A valid config serving one item tagged ``tag`` (plus one from a resource)."""
    return dump(
        unified_config(tag, resources={"feed": items_resource("feed", tag)}, recall_from="feed")
    )


def invalid(tag: str) -> bytes:
    """A config that fails at step ``engine`` (an unknown operator)."""
    return dump(unified_config(tag, extra_ops={"bad": {"type_name": "no_such_operator"}}))


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cli_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("PINEAPPLE_ADMIN_TOKEN", None)
    return env


def run_cli(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """``pineapple ARGS`` to completion; killed and ``TimeoutExpired`` past ``timeout``."""
    return subprocess.run(
        [sys.executable, "-c", CLI, *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def _serve_args(config: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        CLI,
        "serve",
        str(config),
        "--addr",
        "127.0.0.1:0",
        "--shutdown-delay-seconds",
        "0",
    ]


class Serve:
    """``pineapple serve CONFIG`` on a free loopback port; :meth:`close` always kills it."""

    def __init__(self, config: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*_serve_args(config), "--plugin", PLUGIN, *args],
            stderr=subprocess.PIPE,
            text=True,
            env=env or cli_env(),
            cwd=ROOT,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = ""

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # ends at EOF: when the process exits or is killed
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_line(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """The first stderr line matching ``pattern``; AssertionError past ``timeout``."""
        regex = re.compile(pattern)
        end = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    found = regex.search(line)
                    if found:
                        return found
                left = end - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line /{pattern}/:\n" + "".join(self.lines))
                self._seen.wait(left)

    def start(self, timeout: float = 30.0) -> Serve:
        self.url = self.wait_line(r"listening on (http://127\.0\.0\.1:\d+)", timeout).group(1)
        return self

    def client(self, timeout: float = 5.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def terminate(self, timeout: float = 10.0) -> int:
        """SIGTERM; the exit code (``subprocess.TimeoutExpired`` if it does not exit in time)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def wait_config(client: httpx.Client, predicate: Any, timeout: float = 15.0) -> dict[str, Any]:
    """GET /config until ``predicate(body)`` holds (polling another process, with a deadline)."""
    end = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < end:
        body = client.get("/config").json()
        if predicate(body):
            return body
        time.sleep(0.02)
    raise AssertionError(f"/config never satisfied the predicate; last: {body}")
