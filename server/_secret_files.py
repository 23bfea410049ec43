"""``SecretFiles``: what ``${VAR}`` reads: the environment, then a file per variable.

``--secrets-dir DIR`` is how a Kubernetes Secret reaches the server as files
(a volume, one file per key) rather than as environment variables, which leak
into ``/proc/PID/environ``, crash dumps and child processes. ``${VAR}`` in the
config (and ``PINEAPPLE_ADMIN_TOKEN``) reads the environment first and then
``DIR/VAR``. Each read happens at a build, so a rotated Secret (kubelet swaps
the volume's ``..data`` link) is read by the next reload.

Bounds: a variable's name is an identifier (``[A-Za-z_][A-Za-z0-9_]*``: no
path reaches outside the directory by its name), the file it names must resolve
inside the directory (Kubernetes' files are links into ``..data``), be a
regular file and hold at most :data:`MAX_SECRET_BYTES`; listing the directory
stops at :data:`MAX_SECRET_FILES` names. One trailing newline is dropped (a
file written by ``echo``). A file that breaks a bound is a ``ConfigError``
naming its path and the bound, never its content.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from pineapple import ConfigError

__all__ = ["MAX_SECRET_BYTES", "MAX_SECRET_FILES", "SecretFiles", "add_secrets_dir_flag"]

MAX_SECRET_BYTES = 64 * 1024
"""The largest secret file read (a DSN, a token, a password)."""
MAX_SECRET_FILES = 1000
"""The most names listed from the directory (iteration only; a lookup reads one file)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class SecretFiles(Mapping[str, str]):
    """The environment, then ``directory/NAME`` for a ``NAME`` the environment lacks.

    >>> env = SecretFiles("/etc/pineapple/secrets")   # doctest: +SKIP
    >>> env["FEED_MYSQL_DSN"]                          # doctest: +SKIP
    """

    def __init__(self, directory: str | Path, environ: Mapping[str, str] | None = None) -> None:
        self.directory = Path(directory)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ

    def _path(self, name: str) -> Path | None:
        """The file that holds ``name``, or None when there is none to read."""
        if not _NAME.match(name):
            return None
        path = self.directory / name
        try:
            resolved = path.resolve(strict=True)
            root = self.directory.resolve(strict=True)
        except (OSError, RuntimeError):  # absent, a loop of links
            return None
        if not resolved.is_relative_to(root):
            raise ConfigError(f"secret file {path}: resolves outside {self.directory}")
        return resolved

    def _read(self, name: str, path: Path) -> str:
        shown = self.directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfigError(f"secret file {shown}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"secret file {shown}: not a regular file")
            data = os.read(fd, MAX_SECRET_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_SECRET_BYTES:
            raise ConfigError(f"secret file {shown}: more than {MAX_SECRET_BYTES} bytes")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise ConfigError(f"secret file {shown}: not UTF-8 text") from None
        return text[:-1] if text.endswith("\n") else text

    def __getitem__(self, name: str) -> str:
        if name in self._environ:
            return self._environ[name]
        path = self._path(name)
        if path is None:
            raise KeyError(name)
        return self._read(name, path)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._environ or self._path(name) is not None

    def _file_names(self) -> list[str]:
        try:
            with os.scandir(self.directory) as entries:
                names: list[str] = []
                for entry in entries:  # bounded: MAX_SECRET_FILES names
                    if len(names) >= MAX_SECRET_FILES:
                        break
                    if _NAME.match(entry.name):
                        names.append(entry.name)
                return names
        except OSError:
            return []

    def __iter__(self) -> Iterator[str]:
        seen = set(self._environ)
        yield from self._environ
        yield from (name for name in self._file_names() if name not in seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def add_secrets_dir_flag(parser: argparse.ArgumentParser) -> None:
    """``--secrets-dir DIR`` on a subcommand that reads a config (serve, check, publish)."""
    parser.add_argument(
        "--secrets-dir",
        metavar="DIR",
        default=None,
        help="${VAR} in the config (and PINEAPPLE_ADMIN_TOKEN) reads the environment, then "
        "the file DIR/VAR (a Kubernetes Secret mounted as a volume); re-read at each reload",
    )
