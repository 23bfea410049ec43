"""Real ``pineapple check`` / ``pineapple serve`` processes for the bounds tests.

Every child runs under an address-space limit (``MEMORY_LIMIT``), so an
unbounded read (``/dev/zero``) ends in a MemoryError instead of the
machine's OOM killer, and every wait on a child has a timeout, so a hang
(a FIFO) fails the test instead of freezing it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.server.fakes import dump, unified_config

from .._serve import ROOT, Serve, run_cli

__all__ = [
    "CHILD_TIMEOUT",
    "ROOT",
    "LimitedServe",
    "check_fetch",
    "file_config",
    "poll",
    "run_check",
    "write_config",
]

MEMORY_LIMIT = 2 << 30  # bytes of address space a child may map
CHILD_TIMEOUT = 60.0  # seconds any child may take to answer; generous for a busy CI box
_MAIN = (
    "import resource, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT})); "
    "from pineapple.cli import main; sys.exit(main())"
)


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
    # Raises TimeoutExpired (and kills the child) on a hang.
    return run_cli("check", *flags, str(config), timeout=CHILD_TIMEOUT, main=_MAIN)


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


class LimitedServe(Serve):
    """``pineapple serve`` under ``MEMORY_LIMIT``; once constructed it listens (``url``) or
    it has exited (``url`` empty). Always call :meth:`close` (in a ``finally``)."""

    def __init__(self, config: Path, *plugins: str) -> None:
        extra = [arg for plugin in plugins for arg in ("--plugin", plugin)]
        super().__init__(config, *extra, main=_MAIN, wait=False)
        try:
            self.listening_or_exited(CHILD_TIMEOUT)
        except BaseException:
            self.close()
            raise

    def wait_exit(self, timeout: float = CHILD_TIMEOUT) -> int:
        return super().wait_exit(timeout)

    def get(self, path: str) -> httpx.Response:
        assert self.url, "serve did not start:\n" + self.text()
        return httpx.get(self.url + path, timeout=CHILD_TIMEOUT)
