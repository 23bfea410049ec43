"""Where generated files live, and writing or checking them."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pineapple import builtins
from pineapple.engine import OperatorSchema
from pineapple.plugins import PluginError, import_plugins
from pineapple.resource import ResourceSchema

from ._errors import CodegenError
from ._operators import render_operators
from ._resources import render_resources

__all__ = ["default_target", "render_all", "render_plugins", "stale_files", "write_files"]


def default_target() -> Path:
    """``dsl/generated`` of the installed ``dsl`` package (found without importing it)."""
    spec = importlib.util.find_spec("dsl")
    if spec is None or not spec.submodule_search_locations:
        raise CodegenError("cannot find the dsl package to write dsl/generated into")
    return Path(next(iter(spec.submodule_search_locations))) / "generated"


def render_all(
    resources: Sequence[ResourceSchema] | None = None,
    operators: Sequence[OperatorSchema] | None = None,
    *,
    flow_class: bool = False,
) -> dict[str, str]:
    """``file name -> text`` of every generated file (default: the built-ins' registries).

    ``flow_class``: also define ``Flow`` in ``operators.py`` (a plugin's own files).
    """
    if resources is None:
        resources = builtins.resource_registry().all()
    if operators is None:
        operators = builtins.operator_registry().all()
    return {
        "resources.py": render_resources(resources),
        "operators.py": render_operators(operators, flow_class=flow_class),
    }


def render_plugins(specs: Sequence[str]) -> dict[str, str]:
    """The generated files of only the types that importing the plugins ``specs`` registers."""
    resource_registry, operator_registry = (
        builtins.resource_registry(),
        builtins.operator_registry(),
    )
    known_resources = {s.name for s in resource_registry.all()}
    known_operators = {s.name for s in operator_registry.all()}
    try:
        import_plugins(specs)
    except PluginError as exc:
        raise CodegenError(str(exc)) from None
    resources = [s for s in resource_registry.all() if s.name not in known_resources]
    operators = [s for s in operator_registry.all() if s.name not in known_operators]
    if not resources and not operators:
        raise CodegenError(
            f"the plugin(s) {', '.join(specs)} registered no new resource or operator type"
        )
    return render_all(resources, operators, flow_class=True)


def stale_files(target: Path, files: Mapping[str, str]) -> list[str]:
    """The names of files under ``target`` that are missing or differ from ``files``."""
    stale = []
    for name, text in sorted(files.items()):
        path = target / name
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            stale.append(name)
    return stale


FILE_MODE = 0o644
"""The mode of every generated file: a source file like any other (``mkstemp`` makes 0600)."""


def write_files(target: Path, files: Mapping[str, str]) -> list[str]:
    """Write the files that changed (each atomically, mode :data:`FILE_MODE`); returns their
    names."""
    changed = stale_files(target, files)
    target.mkdir(parents=True, exist_ok=True)
    for name in changed:
        fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.", suffix=".tmp")
        try:
            os.fchmod(fd, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(files[name])
            os.replace(tmp, target / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return changed
