"""Importing plugins: modules that register resource or operator types at import.

``--plugin`` of ``serve``, ``check``, ``compile``, ``run`` and ``codegen`` takes
either a module name or the path of a ``.py`` file:

- ``--plugin myplugin``: imported by name; the current directory is on the
  import path (after the installed packages, so it never shadows them), so a
  ``myplugin.py`` or ``myplugin/`` beside the user is found.
- ``--plugin ./myplugin.py`` (any spec ending in ``.py``, or naming an
  existing file): imported from that file under its stem (``myplugin``), with
  the file's folder on the import path so it may import its neighbours. A
  later ``import myplugin`` gets the same module, so its types are registered
  once.

Every failure is a :class:`PluginError` naming the plugin and the cause.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ._errors import ConfigError

__all__ = ["PluginError", "add_plugin_argument", "import_plugin", "import_plugins"]


class PluginError(ConfigError):
    """A plugin module or file could not be imported; the message names it and says why."""


def _on_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.append(folder)


def _is_file_spec(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or Path(spec).is_file()


def _from_file(spec: str) -> ModuleType:
    path = Path(spec).expanduser().resolve()
    if not path.is_file():
        raise PluginError(f"cannot import plugin {spec!r}: no such file {str(path)!r}")
    name = path.stem
    if not name.isidentifier():
        raise PluginError(f"cannot import plugin {spec!r}: {name!r} is not a module name")
    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
        if origin is not None and Path(origin).resolve() == path:
            return loaded
        raise PluginError(
            f"cannot import plugin {spec!r}: a different module named {name!r} is already "
            f"imported (from {origin or 'a built-in'}); rename the file"
        )
    _on_path(str(path.parent))
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"cannot import plugin {spec!r}: not a Python source file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_plugin(spec: str) -> ModuleType:
    """Import one plugin, by module name or file path (see the module docstring)."""
    try:
        if _is_file_spec(spec):
            return _from_file(spec)
        _on_path(os.getcwd())
        return importlib.import_module(spec)
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(f"cannot import plugin {spec!r}: {type(exc).__name__}: {exc}") from exc


def import_plugins(specs: Iterable[str]) -> list[ModuleType]:
    """Import each plugin in order; the first failure raises :class:`PluginError`."""
    return [import_plugin(spec) for spec in specs]


def add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``--plugin MODULE|FILE.py`` option, as every subcommand spells it."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import a module by name (the current directory is searched too) or a .py file "
        "first; it registers resource/operator types; repeatable",
    )
