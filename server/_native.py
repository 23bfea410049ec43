"""Whether the server's compiled group runs: its mypyc build or the pure-Python source.

The group is listed in ``_native_modules.txt`` beside this file (the
per-request counters and the answer batch); ``setup.py`` compiles it as a
group of its own and writes ``_native_manifest.json`` here. The decision is
the engine core's (``pineapple._native.NativeGroup``), made for this group
once, when ``import server`` imports this module first: the pure source runs
with ``PINEAPPLE_PURE_PYTHON=1``, without a build, or once a source changed
after the build.
"""

from __future__ import annotations

from pathlib import Path

from pineapple._native import NativeGroup

__all__ = ["SERVER", "compiled", "pure_reason"]

SERVER = NativeGroup(Path(__file__).resolve().parent, "server.http._answer_batch")
"""The server's compiled group."""
SERVER.install()


def compiled() -> bool:
    """True when this process runs the server's group compiled."""
    return SERVER.compiled()


def pure_reason() -> str | None:
    """Why the server's group runs as Python, or None when it runs compiled."""
    return SERVER.pure_reason()
