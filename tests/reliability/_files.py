"""Real ``pineapple check`` / ``pineapple serve`` processes for the bounds tests.

Every child runs under an address-space limit (``MEMORY_LIMIT``), so an
unbounded read (``/dev/zero``) ends in a MemoryError instead of the
machine's OOM killer, and every wait on a child has a timeout, so a hang
(a FIFO) fails the test instead of freezing it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.server.fakes import dump, unified_config

from .._serve import LISTENING

__all__ = [
    "CHILD_TIMEOUT",
    "ROOT",
    "Serve",
    "check_fetch",
    "file_config",
    "poll",
    "run_check",
    "write_config",
]

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30  # bytes of address space a child may map
CHILD_TIMEOUT = 60.0  # seconds any child may take to answer; generous for a busy CI box
_MAIN = (
    "import resource, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT})); "
    "from pineapple.cli import main; sys.exit(main())"
)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PINEAPPLE_ADMIN_TOKEN", None)
    return env


def file_config(kind: str, path: str, *, interval: float = 60, **params: Any) -> dict[str, Any]:
    """A unified config recalling from one ``json_file``/``csv_file`` resource named ``table``."""
    entry = {"type": f"{kind}_file", "interval": interval, "params": {"path": path, **params}}
    return unified_config("t", resources={"table": entry}, recall_from="table")


def write_config(folder: Path, config: Mapping[str, Any]) -> Path:
    """``config`` written as ``folder/pineapple.json``."""
    path = folder / "pineapple.json"
    path.write_bytes(dump(config))
    return path


def check_fetch(config: Path) -> subprocess.CompletedProcess[str]:
    """``pineapple check --fetch CONFIG`` in a child (see :func:`run_check`)."""
    return run_check(config, fetch=True)


def run_check(config: Path, *, fetch: bool) -> subprocess.CompletedProcess[str]:
    """``pineapple check [--fetch] CONFIG`` in a child; a hang fails the test (timeout)."""
    flags = ["--fetch"] if fetch else []
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "check", *flags, str(config)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=CHILD_TIMEOUT,  # raises TimeoutExpired (and kills the child) on a hang
        check=False,
    )


def poll(what: str, probe: Any, timeout: float = CHILD_TIMEOUT, step: float = 0.05) -> Any:
    """Call ``probe()`` until it returns something truthy; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    # Bounded by the deadline.
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


class Serve:
    """``pineapple serve`` on a free loopback port; ``exit_code`` when it did not start.

    Always call :meth:`close` (in a ``finally``): it kills the child.
    """

    def __init__(self, config: Path, *plugins: str) -> None:
        extra = [arg for plugin in plugins for arg in ("--plugin", plugin)]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _MAIN,
                "serve",
                str(config),
                "--addr",
                "127.0.0.1:0",
                "--shutdown-delay-seconds",
                "0",
                *extra,
            ],
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        self.log: list[str] = []
        self.url: str | None = None
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # Bounded: started or exited, within CHILD_TIMEOUT.
        deadline = time.monotonic() + CHILD_TIMEOUT
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                break

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # ends when the child closes stderr (exit or kill)
            self.log.append(line)
            found = LISTENING.search(line)
            if found and self.url is None:
                self.url = found.group(1)
                self._listening.set()

    def wait_exit(self) -> int:
        """The exit code; the child must exit on its own within the timeout."""
        code = self.proc.wait(CHILD_TIMEOUT)
        self._reader.join(CHILD_TIMEOUT)
        return code

    def get(self, path: str) -> httpx.Response:
        assert self.url is not None, "serve did not start:\n" + self.text()
        return httpx.get(self.url + path, timeout=CHILD_TIMEOUT)

    def text(self) -> str:
        return "".join(self.log)

    def close(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL) and close its pipe."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
