"""Both process models from one place: ``pineapple serve`` alone and with ``--workers 2``.

Tests of behaviour visible over HTTP take the ``mode`` fixture's parameter
and start their server with :func:`serving`, so the two models answer the
same expectations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import psutil

from .._serve import Serve
from .fakes import dump, unified_config
from .pod import serve_plugin

__all__ = ["MODES", "WORKERS", "serving", "serving_pids", "status_kib"]

MODES = ("one process", "--workers 2")
WORKERS = {"one process": 1, "--workers 2": 2}
"""Processes that answer HTTP in each mode."""


@contextlib.contextmanager
def serving(mode: str, tmp_path: Path, *args: str) -> Iterator[Serve]:
    """``pineapple serve`` of a one-item config in ``mode``; every process killed at the end."""
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    extra = list(args)
    if WORKERS[mode] > 1:
        shm = tmp_path / "shm"
        shm.mkdir()
        extra += ["--workers", str(WORKERS[mode]), "--shared-dir", str(shm)]
    with serve_plugin(config, tmp_path / "closes.log", *extra) as proc:  # every worker listens
        yield proc


def status_kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure in KiB (``VmRSS``, ``VmHWM``: the peak resident set)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def serving_pids(pid: int, workers: int) -> list[int]:
    """The processes that answer HTTP for the server ``pid``: itself, or its ``workers``."""
    if workers == 1:
        return [pid]
    children = psutil.Process(pid).children()
    found = [c.pid for c in children if "multiprocessing.spawn" in " ".join(c.cmdline())]
    assert len(found) == workers, found
    return found
