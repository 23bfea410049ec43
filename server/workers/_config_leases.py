"""Leases on config generations: which generations a worker may still build from.

Under ``--workers N`` a worker opens a shared snapshot's files only while it
builds a config generation that names it (its start, or a follow to a newer
generation) and, afterwards, when a newer generation of that same entry is
published. So the files of an entry that a reload drops may be unlinked once
no worker can still be building a generation that named it. The worker's
side says so with a lock, the supervisor's side tests it without any message:

- a worker holds a shared ``flock`` on the config file (``config-G.json``) of
  the generation it last read (:func:`take_lease`), from before it reads the
  bytes until it reads a newer generation; the kernel drops the lock when the
  worker exits, however it exits;
- the supervisor keeps a descriptor of each config file it published
  (:class:`HeldGenerations`); once a generation is superseded (its file
  unlinked) it tries an exclusive ``flock`` without waiting: when that
  succeeds no worker holds the generation, and none can take it any more.

Guarantees:
- A superseded file is unlinked before the supervisor tries its lock, and a
  worker checks ``st_nlink`` after locking: a worker that locks after the
  supervisor's test sees the file unlinked and reads the newer generation
  instead, so the test never misses a worker that could still build it.
- A worker never waits on the lock (``LOCK_NB``): only the supervisor's brief
  test of a superseded generation holds it exclusively, and then the worker
  reads the newer generation too.
- Descriptors are ``O_CLOEXEC``: a spawned worker inherits none of the
  supervisor's, and a restarted worker holds none of its predecessor's.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .._config_read import ConfigFileError

__all__ = ["HeldGenerations", "take_lease"]


def take_lease(path: Path) -> int:
    """Open ``path`` and hold a shared lock on it; the descriptor (close it to release).

    Raises :class:`ConfigFileError` when the file is gone, superseded
    (unlinked) or being released by the supervisor: read the manifest again.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink == 0:
            raise ConfigFileError(path, "was superseded while it was being read")
    except BlockingIOError:
        os.close(fd)
        raise ConfigFileError(path, "was superseded and is being released") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


class HeldGenerations:
    """The supervisor's descriptors of the config generations a worker may still hold.

    Used under the store's lock only (one thread at a time).
    """

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}

    def hold(self, generation: int, path: Path) -> None:
        """Keep a descriptor of ``generation``'s config file (just written, not yet published)."""
        self._fds[generation] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def forget(self, generation: int) -> None:
        """Drop ``generation`` (it was never published, or the store is going away)."""
        fd = self._fds.pop(generation, None)
        if fd is not None:
            os.close(fd)

    def oldest(self, current: int) -> int:
        """The oldest generation a worker may still build from (``current`` at most).

        Releases every generation below ``current`` whose file no worker locks
        any more. Call it only after the superseded files were unlinked.
        """
        for generation in sorted(g for g in self._fds if g < current):
            try:
                fcntl.flock(self._fds[generation], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a worker still holds it
            self.forget(generation)
        return min([g for g in self._fds if g < current], default=current)

    def close(self) -> None:
        """Close every descriptor (the store is being removed)."""
        for generation in list(self._fds):
            self.forget(generation)
