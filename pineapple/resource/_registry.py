"""Resource types: ``ResourceSchema`` + fetcher factory, registered by name.

Symmetric with the operator registry. Business modules call
:func:`register_resource` at import time (the Go ``init()`` pattern); the
default registry also imports the entry-point group ``pineapple.resources``
the first time it is asked for a type it does not know, so installed plugins
are found without editing Pineapple's code.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._errors import DuplicateRegistrationError, RegistryError
from .._params import ParamSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "Fetcher",
    "FetcherFactory",
    "Printer",
    "Registry",
    "ResourceSchema",
    "all_schemas",
    "default_registry",
    "load_plugins",
    "register_resource",
]

ENTRY_POINT_GROUP = "pineapple.resources"
DEFAULT_INTERVAL = 600.0

_log = logging.getLogger("pineapple.resource")

Fetcher = Callable[[], Any]
"""A zero-argument callable returning the new value (or ``NOT_MODIFIED``)."""

FetcherFactory = Callable[[dict[str, Any]], Fetcher]
"""Builds a fetcher from validated params. Should not do slow I/O itself."""


@runtime_checkable
class Printer(Protocol):
    """How a resource type shows its values in status output."""

    def describe(self, value: Any) -> str:
        """A multi-line description of ``value`` (no secrets)."""
        ...

    def summarize(self, value: Any) -> str:
        """A one-line summary of ``value`` (no secrets)."""
        ...


class JSONPrinter:
    """The default printer: summary ``type/name``, description indented JSON (truncated)."""

    limit = 4096

    def __init__(self, type_name: str = "", name: str = "") -> None:
        self._label = f"{type_name or 'resource'}/{name}" if name else (type_name or "resource")

    def describe(self, value: Any) -> str:
        try:
            text = json.dumps(value, indent=2, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
        if len(text) > self.limit:
            text = text[: self.limit] + f"\n... ({len(text) - self.limit} more characters)"
        return text

    def summarize(self, value: Any) -> str:
        return self._label


@dataclass(frozen=True)
class ResourceSchema:
    """A resource type: its name, description, default interval and params.

    ``default_interval`` is in seconds: ``0`` means the manager default
    (600 s), ``-1`` never refresh.
    """

    name: str
    description: str = ""
    default_interval: float = 0
    params: Mapping[str, ParamSpec] = field(default_factory=dict)
    printer: Printer | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise RegistryError("ResourceSchema.name is required")


@dataclass(frozen=True)
class _Entry:
    schema: ResourceSchema
    factory: FetcherFactory


class Registry:
    """A set of resource types. Thread-safe; registration is rare, lookups cheap."""

    def __init__(self, *, plugin_group: str | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._plugin_group = plugin_group
        self._plugins_loaded = plugin_group is None

    def register(self, schema: ResourceSchema, factory: FetcherFactory) -> None:
        """Add a type; a second registration of the same name raises."""
        with self._lock:
            if schema.name in self._entries:
                raise DuplicateRegistrationError(
                    f"resource type {schema.name!r} is already registered"
                )
            self._entries[schema.name] = _Entry(schema, factory)

    def _ensure_plugins(self) -> None:
        if not self._plugins_loaded and self._plugin_group is not None:
            self._plugins_loaded = True
            load_plugins(self._plugin_group)

    def get(self, type_name: str) -> ResourceSchema | None:
        """The schema registered under ``type_name``, or None."""
        entry = self._lookup(type_name)
        return entry.schema if entry else None

    def factory(self, type_name: str) -> FetcherFactory | None:
        """The fetcher factory registered under ``type_name``, or None."""
        entry = self._lookup(type_name)
        return entry.factory if entry else None

    def _lookup(self, type_name: str) -> _Entry | None:
        entry = self._entries.get(type_name)
        if entry is None:
            self._ensure_plugins()
            entry = self._entries.get(type_name)
        return entry

    def all(self) -> list[ResourceSchema]:
        """Every registered schema, sorted by name (plugins loaded first)."""
        self._ensure_plugins()
        with self._lock:
            return [self._entries[name].schema for name in sorted(self._entries)]


def load_plugins(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Import every module named in an entry-point group; returns their names.

    A plugin that fails to import is logged and skipped: one broken plugin
    must not hide the others (a config that uses its types then fails with
    an unknown-type error naming the resource).
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


_DEFAULT = Registry(plugin_group=ENTRY_POINT_GROUP)


def default_registry() -> Registry:
    """The process-wide registry that :func:`register_resource` writes to."""
    return _DEFAULT


def register_resource(schema: ResourceSchema, factory: FetcherFactory) -> None:
    """Register a resource type in the default registry (call at import time)."""
    _DEFAULT.register(schema, factory)


def all_schemas() -> list[ResourceSchema]:
    """Every resource type of the default registry, sorted by name."""
    return _DEFAULT.all()
