"""The word for a file's type, as refusals of non-regular files name it.

Readers that must read only regular files (the config, file tables) ``stat``
first and, for anything else, say what it is without opening it:
``is a FIFO, not a regular file``.
"""

from __future__ import annotations

import stat

__all__ = ["file_kind"]

_KINDS = (
    (stat.S_ISREG, "regular file"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def file_kind(mode: int) -> str:
    """``regular file``, ``directory``, ``FIFO``, ... for an ``st_mode`` (else ``special file``)."""
    for test, word in _KINDS:
        if test(mode):
            return word
    return "special file"
