"""Resource types: ``ResourceSchema`` + fetcher factory, registered by name.

Symmetric with the operator registry. Business modules call
:func:`register_resource` at import time (the Go ``init()`` pattern); the
default registry also imports the entry-point group ``pineapple.resources``
the first time it is asked for a type it does not know, so installed plugins
are found without editing Pineapple's code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._errors import RegistryError
from .._params import ParamSpec
from .._registry import SchemaRegistry
from .._registry import load_plugins as _load_plugins
from ._codec import SnapshotCodec

__all__ = [
    "ENTRY_POINT_GROUP",
    "Fetcher",
    "FetcherFactory",
    "NamedFetcherFactory",
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

Fetcher = Callable[[], Any]
"""A zero-argument callable returning the new value (or ``NOT_MODIFIED``)."""

FetcherFactory = Callable[[dict[str, Any]], Fetcher]
"""Builds a fetcher from validated params. Should not do slow I/O itself."""


@runtime_checkable
class NamedFetcherFactory(Protocol):
    """A fetcher factory that is also told which resource it builds for.

    When a registered factory has ``for_resource``, a config entry's fetcher is
    made by ``for_resource(name, params, declared)`` instead of
    ``factory(params)`` (see ``build_entry``): e.g. the server's shared
    snapshots under ``--workers N`` key each resource's store entry by its
    name, so two resources of one type with equal params stay two values.
    ``declared`` is ``params`` as the config gives them (validated, but a
    relative path not yet resolved against the config's folder): what
    identifies a resource across hosts whose config files live in different
    folders (a fleet's producer and its pods).
    """

    def __call__(self, params: dict[str, Any]) -> Fetcher:
        """A fetcher from ``params`` alone (a caller that knows no resource name)."""
        ...

    def for_resource(
        self, name: str, params: dict[str, Any], declared: dict[str, Any] | None = None
    ) -> Fetcher:
        """The fetcher of the resource ``name`` from its validated ``params``."""
        ...


@runtime_checkable
class Printer(Protocol):
    """How a resource type shows its values in status output."""

    def describe(self, value: Any) -> str:
        """A multi-line description of ``value`` (no secrets)."""
        ...

    def summarize(self, value: Any) -> str:
        """A one-line summary of ``value`` (no secrets)."""
        ...


# A printer may also define ``size_of(value) -> int | None``: the bytes the
# value holds (an estimate is fine; None: unknown). The Manager's memory
# budget and status use it; it is optional, so it is not part of ``Printer``.


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

    def size_of(self, value: Any) -> int | None:
        """Unknown: a value of an arbitrary type has no size we can trust."""
        return None


@dataclass(frozen=True)
class ResourceSchema:
    """A resource type: its name, description, default interval and params.

    ``default_interval`` is in seconds: ``0`` means the manager default
    (600 s), ``-1`` never refresh. ``validator``: ``validate(old, new)``
    run on every new value of this type before the swap (raise to refuse it;
    see ``pineapple.resource.register_validator`` for named hooks).
    ``codec``: how a value is shared by the processes of ``serve --workers N``
    (fetched once, mapped by every worker; see ``SnapshotCodec``); None: each
    worker fetches its own value.
    """

    name: str
    description: str = ""
    default_interval: float = 0
    params: Mapping[str, ParamSpec] = field(default_factory=dict)
    printer: Printer | None = None
    validator: Callable[[Any, Any], None] | None = None
    codec: SnapshotCodec | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise RegistryError("ResourceSchema.name is required")


class Registry(SchemaRegistry[ResourceSchema, FetcherFactory]):
    """A set of resource types (``Registry()`` for an isolated one in tests)."""

    kind = "resource type"


def load_plugins(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Import every module of an entry-point group (default ``pineapple.resources``)."""
    return _load_plugins(group)


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
