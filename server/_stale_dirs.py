"""Snapshot directories left behind by a supervisor that died without cleaning up.

A supervisor deletes its ``pineapple-*`` directory at exit, but one killed by
SIGKILL (or the OOM killer) cannot, and ``/dev/shm`` is memory: the
snapshots would hold RAM until reboot. So each directory carries an
``owner`` file naming the supervisor's pid and that process's start time
(``/proc/<pid>/stat``, field 22, so a recycled pid is not mistaken for the
owner), and a supervisor starting under the same parent removes every
``pineapple-*`` directory of its own user whose owner is gone.

A directory without an owner file (written by an older version, or by
something else) is never touched, nor one of another user.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from pineapple._config_file import ConfigReadError, read_config_file

__all__ = ["MAX_STALE_SCAN", "OWNER_FILE", "STORE_PREFIX", "mark_owner", "remove_stale_dirs"]

STORE_PREFIX = "pineapple-"
"""Name prefix of every snapshot directory a supervisor creates."""
OWNER_FILE = "owner"
"""File in a snapshot directory: ``"<pid> <start time>"`` of the supervisor that owns it."""
MAX_STALE_SCAN = 10_000
"""At most this many entries of the parent directory are looked at per start (fixed:
a parent holding more is not a snapshot parent, and the scan must stay short)."""
_OWNER_MAX_BYTES = 64

_log = logging.getLogger("pineapple.server")


def _start_time(pid: int) -> str | None:
    """The start time (clock ticks since boot) of ``pid``; None if it is gone.

    Without ``/proc`` (not Linux): ``"?"`` while ``kill(pid, 0)`` finds it.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as source:
            stat = source.read(4096)
    except OSError:
        if Path("/proc/self/stat").exists():
            return None  # /proc works: the pid is gone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # it exists, under another user
        return "?"
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def mark_owner(path: Path) -> None:
    """Write ``path/owner`` naming this process."""
    pid = os.getpid()
    (path / OWNER_FILE).write_text(f"{pid} {_start_time(pid) or '?'}\n")


def _owner_alive(path: Path) -> bool | None:
    """Whether the owner named in ``path/owner`` still runs; None without a readable mark."""
    try:
        # Never blocks: an ``owner`` that is a FIFO or a device is no mark, not a hang.
        raw = read_config_file(path / OWNER_FILE, _OWNER_MAX_BYTES, "fixed")
    except ConfigReadError:
        return None
    text = raw.decode("ascii", "replace")
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit():
        return None
    started = _start_time(int(parts[0]))
    if started is None:
        return False
    return parts[1] == "?" or started == "?" or started == parts[1]


def remove_stale_dirs(parent: Path, prefix: str = STORE_PREFIX) -> list[Path]:
    """Delete this user's ``prefix*`` directories under ``parent`` whose owner is gone.

    Returns what was removed (each is logged). Looks at most at
    ``MAX_STALE_SCAN`` entries; never follows a symlink.
    """
    removed: list[Path] = []
    uid = os.getuid()
    try:
        entries = os.scandir(parent)
    except OSError:
        return removed
    with entries:
        for count, entry in enumerate(entries):  # bounded: MAX_STALE_SCAN entries
            if count >= MAX_STALE_SCAN:
                break
            if not entry.name.startswith(prefix):
                continue
            try:
                if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != uid:
                    continue
            except OSError:
                continue
            path = Path(entry.path)
            if _owner_alive(path) is False:
                shutil.rmtree(path, ignore_errors=True)
                _log.info("removed %s: left by a supervisor that is gone", path)
                removed.append(path)
    return removed
