"""A named, thread-safe registry of schemas and factories, with entry-point plugins.

Resource types and operator types are registered the same way: a schema
(which has a ``name``) plus a factory. A registry bound to an entry-point
group imports that group's modules the first time it is asked for a name it
does not know (or for the full list), so installed plugins are found without
editing Pineapple's code.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from typing import Generic, Protocol, TypeVar

from ._errors import DuplicateRegistrationError

__all__ = ["Named", "SchemaRegistry", "load_plugins"]

_log = logging.getLogger("pineapple")


class Named(Protocol):
    @property
    def name(self) -> str: ...


S = TypeVar("S", bound=Named)
F = TypeVar("F")


class SchemaRegistry(Generic[S, F]):
    """``name -> (schema, factory)``. Registration is rare; lookups are cheap."""

    kind = "type"

    def __init__(self, *, plugin_group: str | None = None) -> None:
        self._entries: dict[str, tuple[S, F]] = {}
        self._lock = threading.Lock()
        self._plugin_group = plugin_group
        self._plugins_loaded = plugin_group is None

    def register(self, schema: S, factory: F) -> None:
        """Add ``schema``; a second registration of the same name raises."""
        with self._lock:
            if schema.name in self._entries:
                raise DuplicateRegistrationError(
                    f"{self.kind} {schema.name!r} is already registered"
                )
            self._entries[schema.name] = (schema, factory)

    def get(self, name: str) -> S | None:
        """The schema registered under ``name``, or None."""
        entry = self._lookup(name)
        return entry[0] if entry else None

    def factory(self, name: str) -> F | None:
        """The factory registered under ``name``, or None."""
        entry = self._lookup(name)
        return entry[1] if entry else None

    def all(self) -> list[S]:
        """Every registered schema, sorted by name (plugins loaded first)."""
        self._ensure_plugins()
        with self._lock:
            return [self._entries[name][0] for name in sorted(self._entries)]

    def _lookup(self, name: str) -> tuple[S, F] | None:
        entry = self._entries.get(name)
        if entry is None and not self._plugins_loaded:
            self._ensure_plugins()
            entry = self._entries.get(name)
        return entry

    def _ensure_plugins(self) -> None:
        if not self._plugins_loaded and self._plugin_group is not None:
            self._plugins_loaded = True
            load_plugins(self._plugin_group)


def load_plugins(group: str) -> list[str]:
    """Import every module named in an entry-point group; returns their names.

    A plugin that fails to import is logged and skipped: one broken plugin
    must not hide the others (a config that uses its types then fails with an
    unknown-type error naming the resource or operator).
    """
    loaded: list[str] = []
    for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        try:
            ep.load()
        except Exception:
            _log.exception("loading plugin %s (%s) from %s failed", ep.name, ep.value, group)
            continue
        loaded.append(ep.value)
    return loaded
