"""What every test that starts a real ``pineapple serve`` waits for: its address."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Sequence

__all__ = ["LISTENING", "START_WITHIN", "serving_processes", "wait_for_url", "wait_listening"]

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
"""The line ``serve`` logs once it accepts connections (port 0: the port it got)."""
START_WITHIN = 60.0
"""How long every worker of a ``--workers N`` server may take to listen (a busy machine)."""


def wait_for_url(proc: subprocess.Popen[str], log: list[str]) -> str:
    """The URL ``proc`` listens on, from its log; every line read is kept in ``log``.

    Bounded: the process either logs its address or exits (end of file ends the loop).
    """
    assert proc.stderr is not None
    for line in proc.stderr:
        log.append(line)
        found = LISTENING.search(line)
        if found:
            return found.group(1)
    raise AssertionError("serve exited before listening:\n" + "".join(log))


def serving_processes(args: Sequence[str]) -> int:
    """How many processes answer HTTP for ``serve`` with ``args`` (``--workers N``: N)."""
    if "--workers" not in args:
        return 1
    value = args[list(args).index("--workers") + 1]
    return (os.cpu_count() or 1) if value == "auto" else int(value)


def wait_listening(log: list[str], count: int, within: float = START_WITHIN) -> None:
    """Wait until ``count`` processes logged that they listen (the log fills from a thread).

    With ``--workers N`` the first worker's line gives the URL while the others may
    still be starting: a test that acts then (a fault, a signal) would find them
    half-started. Bounded: ``within`` seconds.
    """
    end = time.monotonic() + within
    while sum(1 for line in list(log) if LISTENING.search(line)) < count:
        assert time.monotonic() < end, f"{count} processes never all listened:\n" + "".join(log)
        time.sleep(0.05)  # polling another process's log, with a deadline
