"""Who owns a snapshot directory: a lock its owner holds, and the sweep of unowned ones.

A supervisor deletes its ``pineapple-*`` directory at exit, but one killed by
SIGKILL (or the OOM killer) cannot, and ``/dev/shm`` is memory: the
snapshots would hold RAM until reboot. So each directory carries an
``owner`` file on which its supervisor holds an exclusive ``flock`` for as
long as it lives (:func:`mark_owner`); the kernel drops the lock when the
process ends, however it ends. A supervisor starting under the same parent
removes every ``pineapple-*`` directory of its own user whose lock it can
take (:func:`remove_stale_dirs`): nobody holds it, so nobody owns it.

A pid would not do: two supervisors sharing one volume from two PID
namespaces (two containers) each see their own pid 1, so a pid and a start
time name a live process in the wrong namespace. A lock is one kernel
object, the same from every namespace of the host.

The file's text is ``"<pid> <start time> flock"``. Versions before the lock
wrote ``"<pid> <start time>"`` and hold no lock; they ignore a mark of three
fields, and a mark of two fields is judged as they judged it (its pid is
gone, or runs with another start time) on top of the lock, so a live
supervisor of an older version sharing the parent keeps its directory.

Never touched: a directory of another user, one without an ``owner`` file,
one whose ``owner`` is empty, is not a regular file, is a symlink, or holds
text of another shape.

Guarantees:
- The owner creates ``owner`` empty, takes the lock, then writes the text; a
  sweep tries the lock only on a file with text. So a sweep never holds the
  lock of a directory being created, and never deletes one: either the file
  is still empty, or its owner already holds the lock.
- A sweep holds the lock while it deletes: two sweeping supervisors never
  both remove one directory, and an owner never loses a directory it holds.
- Never blocks: ``O_NONBLOCK | O_NOFOLLOW`` (a FIFO or a device is no mark),
  ``LOCK_NB`` (a held lock is an answer, not a wait).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
from pathlib import Path

__all__ = [
    "LOCK_MARK",
    "MAX_STALE_SCAN",
    "OWNER_FILE",
    "STORE_PREFIX",
    "mark_owner",
    "remove_stale_dirs",
]

STORE_PREFIX = "pineapple-"
"""Name prefix of every snapshot directory a supervisor creates."""
OWNER_FILE = "owner"
"""File in a snapshot directory that its owner holds locked; its text names the owner."""
LOCK_MARK = "flock"
"""The third field of an owner's text: the lock decides (older versions ignore such marks)."""
MAX_STALE_SCAN = 10_000
"""At most this many entries of the parent directory are looked at per start (fixed:
a parent holding more is not a snapshot parent, and the scan must stay short)."""
_OWNER_MAX_BYTES = 256

_log = logging.getLogger("pineapple.server")


def _start_time(pid: int) -> str | None:
    """The start time (clock ticks since boot) of ``pid``; None if it is gone.

    Without ``/proc`` (not Linux): ``"?"`` while ``kill(pid, 0)`` finds it.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as source:
            text = source.read(4096)
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
    fields = text[text.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def mark_owner(path: Path) -> int:
    """Create ``path/owner``, lock it and name this process in it; the locked descriptor.

    The directory is owned while the descriptor stays open: close it only
    after the directory was removed (``O_CLOEXEC``: no child inherits it).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(path / OWNER_FILE, flags, 0o600)
    try:
        # A fresh file with no text: no sweep tries its lock, so this never waits.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        pid = os.getpid()
        os.write(fd, f"{pid} {_start_time(pid) or '?'} {LOCK_MARK}\n".encode())
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unowned(fields: list[str]) -> bool:
    """Whether a mark whose lock nobody holds is a stale one (see module docs)."""
    if len(fields) == 3 and fields[0].isdigit() and fields[2] == LOCK_MARK:
        return True  # a locking owner: the free lock decides
    if len(fields) != 2 or not fields[0].isdigit():
        return False  # not a mark we know
    started = _start_time(int(fields[0]))  # an owner of an older version, which never locks
    return started is None or (fields[1] != "?" and started != "?" and started != fields[1])


def _take_if_unowned(path: Path) -> int | None:
    """The descriptor of ``path/owner``, locked by this call, if it marks a stale directory."""
    try:
        fd = os.open(path / OWNER_FILE, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no owner file, or a symlink: no mark
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not 0 < st.st_size <= _OWNER_MAX_BYTES:
            os.close(fd)
            return None  # not a regular file, or empty (its owner is still creating it)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        text = os.pread(fd, _OWNER_MAX_BYTES, 0).decode("ascii", "replace")
    except OSError:  # BlockingIOError: its owner holds the lock
        os.close(fd)
        return None
    if not _unowned(text.split()):
        os.close(fd)
        return None
    return fd


def remove_stale_dirs(parent: Path, prefix: str = STORE_PREFIX) -> list[Path]:
    """Delete this user's ``prefix*`` directories under ``parent`` whose lock nobody holds.

    Returns what was removed (each is logged). Looks at most at
    ``MAX_STALE_SCAN`` entries; never follows a symlink, never waits on a lock.
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
            fd = _take_if_unowned(path)
            if fd is None:
                continue
            try:
                shutil.rmtree(path, ignore_errors=True)
            finally:
                os.close(fd)
            _log.info("removed %s: no supervisor holds its lock any more", path)
            removed.append(path)
    return removed
