"""What every test that starts a real ``pineapple serve`` waits for: its address."""

from __future__ import annotations

import re
import subprocess

__all__ = ["LISTENING", "wait_for_url"]

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
"""The line ``serve`` logs once it accepts connections (port 0: the port it got)."""


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
