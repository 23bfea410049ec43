"""Where in the user's file an operator was declared: the ``$code_info`` of its config entry.

Apple writes ``"$code_info": "flow.py:12 in build(): .filter_truncate(...)"``
beside each operator, so an error found later (at compile, at load, at run)
can point at the line that declared it. The location is the first frame of
the call stack outside the DSL itself (this package and generated operator
methods, which mark their module with ``GENERATED_MARKER``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType

__all__ = ["GENERATED_MARKER", "caller_location"]

GENERATED_MARKER = "__pineapple_dsl_generated__"
"""A module-level name set in generated operator modules: their frames are not the user's."""

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
_MAX_FRAMES = 64
"""Bound of the stack walk (a declaration is a handful of frames below the user's line)."""


def _display(filename: str) -> str:
    """``filename`` relative to the working directory when it lies below it (stable output)."""
    try:
        absolute = os.path.abspath(filename)
        here = os.getcwd() + os.sep
    except OSError:
        return filename
    return absolute[len(here) :] if absolute.startswith(here) else filename


def caller_location(type_name: str) -> str:
    """Where the user declared the call: the first frame outside the DSL (``""``: none)."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return ""
        filename = frame.f_code.co_filename
        inside = os.path.abspath(filename).startswith(_PACKAGE)
        if not inside and not frame.f_globals.get(GENERATED_MARKER, False):
            where = f"{_display(filename)}:{frame.f_lineno}"
            return f"{where} in {frame.f_code.co_name}(): .{type_name}(...)"
        frame = frame.f_back
    return ""
