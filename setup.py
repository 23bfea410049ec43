"""Build hook for the optional compiled parts (all metadata is in pyproject.toml).

Every one is optional: where it cannot be compiled, the install still
succeeds. Without ``_cref`` Pineapple uses the pure-Python
RefValue/ResourceHandle; without ``_untrack`` feed_data columns are left to
the garbage collector to untrack (one long collection after each load);
without the mypyc group (the engine core: ``pineapple._native.COMPILED``,
compiled from its typed source by mypyc, a build requirement from PyPI) the
same modules run as Python. A build that compiled the whole group writes
``pineapple/_native_manifest.json`` (each source's SHA-256): at run time a
source that no longer matches runs as Python (``pineapple._native``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
MANIFEST = Path("pineapple") / "_native_manifest.json"


def _compiled_modules() -> tuple[str, ...]:
    """``pineapple._native.COMPILED``, read without importing the package."""
    tree = ast.parse((HERE / "pineapple" / "_native.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED":
            modules: tuple[str, ...] = ast.literal_eval(node.value)
            return modules
    raise RuntimeError("pineapple/_native.py: COMPILED not found")


MODULES = _compiled_modules()
SOURCES = {m: Path(*m.split(".")).with_suffix(".py") for m in MODULES}


def _mypyc_extensions() -> list[Extension]:
    if os.environ.get("PINEAPPLE_NO_COMPILE") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("setup.py: mypyc not available; the engine core stays Python", file=sys.stderr)
        return []
    try:
        exts: list[Extension] = mypycify(
            [str(p) for p in SOURCES.values()], opt_level="3", group_name="pineapple_core"
        )
    except (Exception, SystemExit) as exc:  # mypy's errors end in SystemExit
        print(f"setup.py: mypyc failed ({exc}); the engine core stays Python", file=sys.stderr)
        return []
    for ext in exts:
        ext.optional = True
    return exts


class BuildExt(build_ext):
    """build_ext that writes the group's manifest when every module of it was built."""

    def run(self) -> None:
        manifest = (HERE if self.inplace else Path(self.build_lib)) / MANIFEST
        manifest.unlink(missing_ok=True)  # a failed build must not vouch for old extensions
        super().run()
        if all(Path(self.get_ext_fullpath(m)).is_file() for m in MODULES):
            hashes = {
                m: hashlib.sha256((HERE / p).read_bytes()).hexdigest() for m, p in SOURCES.items()
            }
            manifest.parent.mkdir(parents=True, exist_ok=True)
            manifest.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "pineapple.resource._cref",
            sources=["pineapple/resource/_cref.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "resources._untrack",
            sources=["resources/_untrack.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        *_mypyc_extensions(),
    ],
)
