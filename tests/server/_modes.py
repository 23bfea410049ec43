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

from .fakes import dump, unified_config
from .test_e2e import ServeProcess

__all__ = ["MODES", "WORKERS", "serving"]

MODES = ("one process", "--workers 2")
WORKERS = {"one process": 1, "--workers 2": 2}
"""Processes that answer HTTP in each mode."""


@contextlib.contextmanager
def serving(mode: str, tmp_path: Path, *args: str) -> Iterator[ServeProcess]:
    """``pineapple serve`` of a one-item config in ``mode``; every process killed at the end."""
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t")))
    extra = list(args)
    if WORKERS[mode] > 1:
        shm = tmp_path / "shm"
        shm.mkdir()
        extra += ["--workers", str(WORKERS[mode]), "--shared-dir", str(shm)]
    proc = ServeProcess(config, tmp_path / "closes.log", *extra)
    children: list[psutil.Process] = []
    try:  # ServeProcess waited for every worker to listen
        with contextlib.suppress(psutil.NoSuchProcess):
            children = psutil.Process(proc.proc.pid).children(recursive=True)
        yield proc
    finally:
        for child in children:  # none may outlive the test (they hold the log pipe)
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        proc.close()
