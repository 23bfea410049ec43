"""Handing freed heap pages back to the operating system (glibc's ``malloc_trim``).

CPython and C extensions allocate through ``malloc``; glibc keeps freed pages
in its arenas, so a process that built and dropped a large value (a discarded
Lua state, a table the supervisor published and closed) keeps its RSS high
until :func:`trim_heap` asks glibc to return them. Elsewhere (musl, macOS)
it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

__all__ = ["trim_heap"]

_LIBC_TRIM: Callable[[int], int] | None = None
_LIBC_LOOKED = False


def trim_heap() -> None:
    """Ask glibc to give freed heap pages back to the OS (a no-op without glibc)."""
    global _LIBC_TRIM, _LIBC_LOOKED
    if not _LIBC_LOOKED:
        # Guarantees: racing first calls all look up the same symbol; any write wins.
        name = ctypes.util.find_library("c")
        try:
            _LIBC_TRIM = ctypes.CDLL(name).malloc_trim if name else None
        except (OSError, AttributeError):
            _LIBC_TRIM = None
        _LIBC_LOOKED = True
    if _LIBC_TRIM is not None:
        _LIBC_TRIM(0)
