"""Build hook for the optional compiled parts (all metadata is in pyproject.toml).

Every one is optional: where it cannot be compiled, the install still
succeeds. Without ``_cref`` Pineapple uses the pure-Python
RefValue/ResourceHandle; without ``_orders`` the reorder operators always sort in
Python; without ``_untrack`` feed_data columns are left to
the garbage collector to untrack (one long collection after each load);
without a mypyc group the same modules run as Python. Each package with a
compiled group lists it in its ``_native_modules.txt`` (:data:`GROUPS`): the
engine core (``pineapple``) and the server's per-request counters and answer
batch (``server``), each compiled by mypyc as a group of its own (no module of
one calls the other's natively). A build that compiled a whole group writes
``<package>/_native_manifest.json`` (each source's SHA-256): at run time a
source that no longer matches runs as Python (``pineapple._native``).

``python setup.py --native-sources`` prints every group's sources, one a
line (the Makefile's ``NATIVE_SRC``), without building anything.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
GROUPS = {"pineapple": "pineapple_core", "server": "server_native"}
"""``package -> mypyc group name`` of every compiled group."""


def _native_list() -> ModuleType:
    """``pineapple/_native_list.py`` (stdlib only, no side effect) loaded by path."""
    path = HERE / "pineapple" / "_native_list.py"
    spec = importlib.util.spec_from_file_location("_pineapple_native_list", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NATIVE_LIST = _native_list()


def group_modules() -> dict[str, tuple[str, ...]]:
    """``package -> its compiled group's modules``, read by the one reader of the lists."""
    read, name = NATIVE_LIST.read_module_list, NATIVE_LIST.MODULE_LIST
    return {pkg: read(HERE / pkg / name) for pkg in GROUPS}


def _source(module: str) -> Path:
    """The source of ``module``, relative to this directory (as mypycify takes it)."""
    path: Path = NATIVE_LIST.source_path(module, Path())
    return path


if __name__ == "__main__" and sys.argv[1:] == ["--native-sources"]:
    for modules in group_modules().values():
        print("\n".join(str(_source(m)) for m in modules))
    sys.exit(0)

from setuptools import Extension, setup  # noqa: E402  (not needed to list the sources)
from setuptools.command.build_ext import build_ext  # noqa: E402

MODULES = group_modules()
COMPILED: set[str] = set()
"""The packages whose group mypyc compiled in this build: only these get a manifest."""


def _mypyc_extensions() -> list[Extension]:
    if os.environ.get("PINEAPPLE_NO_COMPILE") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("setup.py: mypyc not available; the compiled groups stay Python", file=sys.stderr)
        return []
    exts: list[Extension] = []
    for package, modules in MODULES.items():
        try:
            group: list[Extension] = mypycify(
                [str(_source(m)) for m in modules], opt_level="3", group_name=GROUPS[package]
            )
        except (Exception, SystemExit) as exc:  # mypy's errors end in SystemExit
            print(f"setup.py: mypyc failed on {package} ({exc}); it stays Python", file=sys.stderr)
            continue
        COMPILED.add(package)
        exts.extend(group)
    for ext in exts:
        ext.optional = True
    return exts


class BuildExt(build_ext):
    """build_ext that writes each group's manifest when every module of it was built."""

    def run(self) -> None:
        base = HERE if self.inplace else Path(self.build_lib)
        for package in MODULES:  # a failed build must not vouch for old extensions
            (base / package / "_native_manifest.json").unlink(missing_ok=True)
        super().run()
        for package, modules in MODULES.items():
            # Extensions left on disk by an earlier build do not count: only a group
            # compiled now, whose every module was built, is vouched for.
            if package not in COMPILED:
                continue
            if not all(Path(self.get_ext_fullpath(m)).is_file() for m in modules):
                continue
            hashes = NATIVE_LIST.source_hashes(modules, HERE)
            manifest = base / package / "_native_manifest.json"
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
            "pineapple.operators._orders",
            sources=["pineapple/operators/_orders.c"],
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
