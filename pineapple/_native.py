"""Which engine core runs: the compiled one (mypyc, built at install) or the pure-Python source.

``setup.py`` compiles the modules of :data:`COMPILED` with mypyc as one group
(their code calls each other natively: all of them run compiled, or none) and
writes the SHA-256 of every source it compiled to ``_native_manifest.json``
beside this file. ``import pineapple`` imports this module first; importing it
runs :func:`install`, which puts
a finder at the head of ``sys.meta_path`` that serves the ``.py`` source of
every module of the group (the compiled ``.so`` beside it is then never
loaded) when:

- ``PINEAPPLE_PURE_PYTHON=1`` (the tested fallback, as for ``_cref``);
- the manifest is missing (nothing was compiled, or the build failed);
- a source no longer matches its hash (an editable install whose ``.py``
  changed after the build): one :class:`StaleNativeWarning`, and the edited
  source runs; ``make install`` (or ``pip install -e .``) builds it again.

Otherwise the finder steps aside and the ordinary one loads the extensions.
:func:`compiled` says which path this process runs.

Guarantees:
- One decision per process (made by :func:`install`, before any module of the
  group is imported), the same for every module of the group.
- A changed source is never shadowed by a stale extension: the check hashes
  the bytes the interpreter would run (about 200 KB, read once at start).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["COMPILED", "PureCopy", "StaleNativeWarning", "compiled", "install", "pure_reason"]

COMPILED = (
    "pineapple.engine._answer",
    "pineapple.engine._engine",
    "pineapple.engine._frame",
    "pineapple.engine._gofmt",
    "pineapple.engine._io",
    "pineapple.engine._run",
    "pineapple.engine._step",
    "pineapple.engine._template",
    "pineapple.engine.http",
    "pineapple.operators._lua._values",
    "pineapple.operators.filter_condition",
    "pineapple.operators.filter_truncate",
    "pineapple.operators.merge_dedup",
    "pineapple.operators.recall_static",
    "pineapple.operators.reorder_sort",
    "pineapple.operators.transform_copy",
    "pineapple.operators.transform_dispatch",
    "pineapple.operators.transform_normalize",
    "server._answer_batch",
    "server._gometrics",
    "server._request_metrics",
)
"""The compiled group (``setup.py`` reads this tuple; keep it a literal)."""

MANIFEST = "_native_manifest.json"
_ROOT = Path(__file__).resolve().parent.parent


class StaleNativeWarning(RuntimeWarning):
    """A compiled module's source changed after the build: the pure-Python source runs."""


def source_path(module: str) -> Path:
    """The ``.py`` file of a module of the group."""
    return _ROOT.joinpath(*module.split(".")).with_suffix(".py")


def source_hashes(modules: Sequence[str] = COMPILED) -> dict[str, str]:
    """SHA-256 of every module's source, by module name (what the manifest holds)."""
    return {m: hashlib.sha256(source_path(m).read_bytes()).hexdigest() for m in modules}


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of the group's modules, ahead of their extensions."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


_reason: str | None = None
_decided = False


def _pure_reason() -> str | None:
    """Why this process runs the pure source (None: the compiled modules may load)."""
    if os.environ.get("PINEAPPLE_PURE_PYTHON") == "1":
        return "PINEAPPLE_PURE_PYTHON=1"
    manifest = Path(__file__).with_name(MANIFEST)
    try:
        built: dict[str, str] = json.loads(manifest.read_bytes())
    except (OSError, ValueError):
        return "not compiled (no build manifest)"
    if set(built) != set(COMPILED):
        return "the build compiled another set of modules"
    try:
        hashes = source_hashes()
    except OSError as exc:  # a source of the group is not there to check
        return f"a compiled module's source is unreadable: {exc}"
    stale = sorted(m for m, digest in hashes.items() if built[m] != digest)
    if stale:
        warnings.warn(
            f"{', '.join(stale)}: source changed since the build; running the pure-Python "
            "engine core (make install rebuilds it)",
            StaleNativeWarning,
            stacklevel=3,
        )
        return f"source changed since the build: {', '.join(stale)}"
    return None


def install() -> None:
    """Decide once for this process; serve the sources when the compiled core may not run."""
    global _reason, _decided
    if _decided:
        return
    _decided = True
    _reason = _pure_reason()
    if _reason is not None:
        sys.meta_path.insert(0, _SourceFinder(frozenset(COMPILED)))


def pure_reason() -> str | None:
    """Why the pure-Python core runs, or None when the compiled one does."""
    if _reason is None and not compiled():
        return "not compiled (the extensions are absent)"
    return _reason


def compiled() -> bool:
    """True when this process runs the compiled engine core."""
    if _reason is not None:
        return False
    from .engine import _frame

    return not (_frame.__file__ or "").endswith(".py")


_PACKAGES = ("pineapple", "resources")
"""Top-level packages a :class:`PureCopy` loads a second time (``resources`` registers
into the registries of ``pineapple``)."""


def _take_modules() -> dict[str, ModuleType]:
    """Remove and return every loaded module of :data:`_PACKAGES`."""
    names = [n for n in sys.modules if n.partition(".")[0] in _PACKAGES]
    return {n: sys.modules.pop(n) for n in names}


class PureCopy:
    """A second copy of ``pineapple`` and ``resources`` in this process, all from source.

    For side-by-side comparisons of the compiled and the pure-Python core in
    one process (the byte-for-byte tests, ``make bench``): objects built
    from ``copy.module("pineapple.engine")`` run pure Python whatever this
    process's own core is. Use them inside ``with copy:``, which puts the
    copy's modules in ``sys.modules`` (imports made while it runs resolve
    within the copy) and puts the process's own back on exit. Not for
    production: the two copies share no registries, classes or errors.
    """

    def __init__(self, *modules: str) -> None:
        self._own: dict[str, ModuleType] = {}
        self._saved: dict[str, ModuleType] | None = None
        env = os.environ.get("PINEAPPLE_PURE_PYTHON")
        meta = list(sys.meta_path)
        finder = _SourceFinder(frozenset(COMPILED))
        saved = _take_modules()
        try:
            sys.meta_path.insert(0, finder)
            os.environ["PINEAPPLE_PURE_PYTHON"] = "1"
            for name in ("pineapple.builtins", "pineapple.engine.http", *modules):
                importlib.import_module(name)
        finally:
            self._own = _take_modules()
            sys.modules.update(saved)
            sys.meta_path[:] = meta
            if env is None:
                os.environ.pop("PINEAPPLE_PURE_PYTHON", None)
            else:
                os.environ["PINEAPPLE_PURE_PYTHON"] = env
        self._finder = finder
        native = self._own["pineapple._native"]
        if native.compiled():
            raise RuntimeError("PureCopy: the copy loaded compiled modules")

    def module(self, name: str) -> ModuleType:
        """A module of the copy (imported when the copy was made)."""
        return self._own[name]

    def __enter__(self) -> PureCopy:
        if self._saved is not None:
            raise RuntimeError("PureCopy is not reentrant")
        self._saved = _take_modules()
        sys.modules.update(self._own)
        sys.meta_path.insert(0, self._finder)
        return self

    def __exit__(self, *exc: object) -> None:
        saved, self._saved = self._saved, None
        assert saved is not None
        sys.meta_path.remove(self._finder)
        self._own = _take_modules()
        sys.modules.update(saved)


install()
