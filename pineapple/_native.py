"""Which engine core runs: the compiled one (mypyc, built at install) or the pure-Python source.

A package's compiled group is listed in its ``_native_modules.txt`` (one
module a line; ``_native_list.read_module_list`` is the one reader, which
``setup.py`` and the Makefile call too). ``setup.py`` compiles each group with mypyc as
one group (their code calls each other natively: all of them run compiled,
or none) and writes the SHA-256 of every source it compiled to
``_native_manifest.json`` beside the list. A :class:`NativeGroup` decides for
one group: the engine core's is :data:`CORE` (this package; it names no
module of another package), the server's is ``server._native``.
``import pineapple`` imports this module first; importing it runs
:func:`install`, which puts a finder at the head of ``sys.meta_path`` that
serves the ``.py`` source of every module of the group (the compiled ``.so``
beside it is then never loaded) when:

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

from . import _native_list
from ._native_list import MODULE_LIST, read_module_list, source_hashes

__all__ = [
    "COMPILED",
    "CORE",
    "NativeGroup",
    "PureCopy",
    "StaleNativeWarning",
    "compiled",
    "install",
    "pure_reason",
]

MANIFEST = "_native_manifest.json"
_ROOT = Path(__file__).resolve().parent.parent


class StaleNativeWarning(RuntimeWarning):
    """A compiled module's source changed after the build: the pure-Python source runs."""


def source_path(module: str) -> Path:
    """The ``.py`` file of a module of the engine core's group."""
    return _native_list.source_path(module, _ROOT)


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of a group's modules, ahead of their extensions."""

    def __init__(self, names: frozenset[str], root: Path) -> None:
        self.names = names
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        source = _native_list.source_path(fullname, self.root)
        return importlib.util.spec_from_file_location(fullname, source)


class NativeGroup:
    """One package's compiled group: its module list, its build manifest, its decision.

    ``directory`` (a package's) holds the list (:data:`MODULE_LIST`) and, once
    ``setup.py`` compiled every module of it, the manifest (:data:`MANIFEST`);
    ``probe`` is a module of the group whose file tells whether the compiled
    one loaded. Guarantees: as the module's (one decision per process, made
    by :meth:`install` before any module of the group is imported, the same
    for every module of the group).
    """

    def __init__(self, directory: Path, probe: str) -> None:
        self.directory = directory
        self.root = directory.parent
        self.modules = read_module_list(directory / MODULE_LIST)
        self.probe = probe
        self._reason: str | None = None
        self._decided = False

    def finder(self) -> importlib.abc.MetaPathFinder:
        """A finder that serves the group's sources ahead of its extensions."""
        return _SourceFinder(frozenset(self.modules), self.root)

    def _pure_reason(self) -> str | None:
        """Why this process runs the pure source (None: the compiled modules may load)."""
        if os.environ.get("PINEAPPLE_PURE_PYTHON") == "1":
            return "PINEAPPLE_PURE_PYTHON=1"
        try:
            built: dict[str, str] = json.loads((self.directory / MANIFEST).read_bytes())
        except (OSError, ValueError):
            return "not compiled (no build manifest)"
        if set(built) != set(self.modules):
            return "the build compiled another set of modules"
        try:
            hashes = source_hashes(self.modules, self.root)
        except OSError as exc:  # a source of the group is not there to check
            return f"a compiled module's source is unreadable: {exc}"
        stale = sorted(m for m, digest in hashes.items() if built[m] != digest)
        if stale:
            warnings.warn(
                f"{', '.join(stale)}: source changed since the build; running the "
                "pure-Python source (make install rebuilds it)",
                StaleNativeWarning,
                stacklevel=4,
            )
            return f"source changed since the build: {', '.join(stale)}"
        return None

    def install(self) -> None:
        """Decide once for this process; serve the sources when the group may not run."""
        if self._decided:
            return
        self._decided = True
        self._reason = self._pure_reason()
        if self._reason is not None:
            sys.meta_path.insert(0, self.finder())

    def pure_reason(self) -> str | None:
        """Why the group's pure-Python source runs, or None when its compiled modules do."""
        if self._reason is None and not self.compiled():
            return "not compiled (the extensions are absent)"
        return self._reason

    def compiled(self) -> bool:
        """True when this process runs the group compiled."""
        if self._reason is not None:
            return False
        probe = importlib.import_module(self.probe)
        return not (probe.__file__ or "").endswith(".py")


CORE = NativeGroup(Path(__file__).resolve().parent, "pineapple.engine._frame")
"""The engine core's group (``_native_modules.txt`` beside this file)."""
COMPILED = CORE.modules
"""The modules of the engine core's group."""


def install() -> None:
    """Decide once for this process whether the engine core runs compiled."""
    CORE.install()


def pure_reason() -> str | None:
    """Why the pure-Python core runs, or None when the compiled one does."""
    return CORE.pure_reason()


def compiled() -> bool:
    """True when this process runs the compiled engine core."""
    return CORE.compiled()


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
        finder = CORE.finder()
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
