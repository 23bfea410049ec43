"""The format of a compiled group's list (``<package>/_native_modules.txt``), read once;
where a module's source is and the hashes a build manifest holds.

One module a line; blank lines and ``#`` comments are skipped. This module
imports nothing but the standard library and does nothing on import, so
``setup.py`` (and through it the Makefile: ``python setup.py
--native-sources``) loads it by path, without the package: every reader of a
list reads it with :func:`read_module_list`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MODULE_LIST", "read_module_list", "source_hashes", "source_path"]

MODULE_LIST = "_native_modules.txt"
"""The name of a package's list file."""


def read_module_list(path: Path) -> tuple[str, ...]:
    """The modules ``path`` names, in order."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return tuple(line for line in lines if line)


def source_path(module: str, root: Path) -> Path:
    """The ``.py`` file of ``module``, whose top-level package lives under ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def source_hashes(modules: Sequence[str], root: Path) -> dict[str, str]:
    """SHA-256 of every module's source, by module name (what a build manifest holds)."""
    return {m: hashlib.sha256(source_path(m, root).read_bytes()).hexdigest() for m in modules}
