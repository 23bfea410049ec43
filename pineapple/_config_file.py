"""The unified config file as the commands read it: one size limit, one bounded read.

Every subcommand that reads a config (``serve``, ``check``, ``run``, ``dag``)
takes ``--max-config-bytes N`` from :func:`add_max_config_bytes`, defaulting
to :data:`DEFAULT_MAX_CONFIG_BYTES` (also ``server.Config.max_config_bytes``),
and reads the file with :func:`read_config_file`, which never blocks on the
path's type and never reads more than the limit (plus one byte). It lives
here, below ``server``, so that ``pineapple dag`` reads configs the same way
without importing the server. Other small files that must never block are
read with it too (``run``'s request file, a snapshot directory's owner mark).
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from ._errors import PineappleError
from ._file_kind import file_kind

__all__ = [
    "DEFAULT_MAX_CONFIG_BYTES",
    "MAX_CONFIG_BYTES_FLAG",
    "ConfigReadError",
    "add_max_config_bytes",
    "read_config_file",
]

DEFAULT_MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The largest config file read by default (a big config is a few hundred KiB)."""

MAX_CONFIG_BYTES_FLAG = "--max-config-bytes"

_READ_CHUNK = 1 << 20


class ConfigReadError(PineappleError):
    """The path cannot be read as a config: missing, not a regular file, or too big.

    The message is ``'PATH' REASON``; ``path`` and ``reason`` hold its parts.
    """

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{str(path)!r} {reason}")
        self.path = path
        self.reason = reason


def add_max_config_bytes(parser: argparse.ArgumentParser) -> None:
    """The ``--max-config-bytes N`` option of every subcommand that reads a config."""
    parser.add_argument(
        MAX_CONFIG_BYTES_FLAG,
        type=int,
        default=DEFAULT_MAX_CONFIG_BYTES,
        metavar="N",
        help="refuse a config file bigger than N bytes",
    )


def read_config_file(path: Path, max_bytes: int, limit_name: str = MAX_CONFIG_BYTES_FLAG) -> bytes:
    """The file's bytes (symlinks followed); :class:`ConfigReadError` otherwise.

    Never blocks on the path's type: the file is opened with ``O_NONBLOCK``
    (opening a FIFO for reading would otherwise wait for a writer forever),
    then ``fstat`` refuses anything but a regular file (FIFO, device,
    directory, socket) and a file over ``max_bytes`` before reading a byte.
    ``limit_name`` (what sets ``max_bytes``: its flag, or ``fixed``) is named
    when the file is too big.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigReadError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigReadError(path, f"is not a regular file (it is a {file_kind(mode)})")
        return _read_bounded(fd, path, max_bytes, limit_name)
    finally:
        os.close(fd)


def _read_bounded(fd: int, path: Path, limit: int, limit_name: str) -> bytes:
    """Read ``fd`` to its end, refusing more than ``limit`` bytes (it may grow as we read)."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise ConfigReadError(
            path, f"is {size} bytes, over the limit of {limit} bytes ({limit_name})"
        )
    chunks: list[bytes] = []
    total = 0
    # Bounded by bytes: each pass reads at least one byte or ends, and stops past ``limit``.
    while True:
        try:
            chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - total))
        except OSError as exc:
            raise ConfigReadError(path, f"cannot be read: {exc.strerror or exc}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise ConfigReadError(
                path, f"grew past the limit of {limit} bytes while being read ({limit_name})"
            )
