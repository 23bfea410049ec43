"""The shared-snapshot store's format: what the publishing and the mapping side both read.

With ``--workers N`` the supervisor fetches every resource whose type declares
a codec (``ResourceSchema.codec``, see :func:`codec_of`) and publishes each new
value into a store: a private directory (under ``/dev/shm`` by default) of
immutable snapshot files and one small ``manifest.json``. Workers never talk
to the data sources: they open the newest published generation with the type's
codec. A type without a codec is fetched by each worker and never by the
supervisor. The two sides are two modules:

    supervisor/_publishing.py   SharedStore (every write), PublishingFetcher,
                                publishing_registry
    worker/_mapping.py          MappedStore (open, the config read), MappedFetcher,
                                mapped_registry

This module is the layout between them: the manifest (``key -> {"generation",
"stem", "files"}``, read bounded by :data:`MANIFEST_MAX_BYTES`), the entry keys
(:func:`entry_key`), the reserved entries (:data:`CONFIG_ENTRY`,
:data:`RELOAD_ENTRY`), the metrics subdirectory and where a store lives.

An entry is identified by its *key*: a hash of its resource's name, type and
validated params (:func:`entry_key`), so the supervisor and a worker that read
the same config agree on it without passing anything else around, no secret
from the params appears in a file name, and two resources of one type with
equal params are two entries (each refused, pinned and rolled back on its
own). Both sides' registries make their fetchers through a
:class:`KeyedFactory`, which the Manager tells the resource's name.
Besides one entry per shared resource, the manifest holds entries whose keys
start with ``_`` (an entry key starts with a type name).

Guarantees (what a reader may rely on; the writer's side keeps them, see
``supervisor/_publishing.py``):
- ``manifest.json`` is only ever replaced whole, by one ``rename``: a reader
  sees the old or the new manifest, never a mix, and every file a manifest
  names is complete.
- A manifest names a config generation only after every snapshot it names
  was published.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pineapple import PineappleError
from pineapple.resource import Fetcher, FetcherFactory, Registry
from pineapple.resource.lowlevel import NamedFetcherFactory, SnapshotCodec

__all__ = [
    "CONFIG_ENTRY",
    "MANIFEST_MAX_BYTES",
    "MANIFEST_NAME",
    "METRICS_DIR",
    "RELOAD_ENTRY",
    "KeyedFactory",
    "SnapshotMissingError",
    "StoreDirectory",
    "codec_of",
    "default_shared_parent",
    "entry_key",
]

METRICS_DIR = "metrics"
"""The store's subdirectory where every process of the pod flushes its metrics."""
MANIFEST_NAME = "manifest.json"
"""The store's one mutable file: what is published (replaced whole, by a rename)."""
MANIFEST_MAX_BYTES = 1024 * 1024
"""A manifest larger than this is refused (it lists one line per shared resource)."""

CONFIG_ENTRY = "_config"
"""Manifest entry: ``{"generation", "file", "content_hash"}`` of the accepted config."""
RELOAD_ENTRY = "_reload"
"""Manifest entry: the supervisor's last config reload outcome (``ReloadOutcome.to_dict``)."""


class SnapshotMissingError(PineappleError):
    """A worker asked for a shared resource the supervisor has not published."""


def codec_of(registry: Registry, type_name: str) -> SnapshotCodec | None:
    """The codec ``type_name`` declares in ``registry`` (None: not shared, or unknown)."""
    schema = registry.get(type_name) if type_name else None
    return None if schema is None else schema.codec


def entry_key(name: str, type_name: str, params: Any) -> str:
    """The key of the resource ``name`` in the store: a hash of its name, type and params."""
    text = orjson.dumps(
        {"name": name, "type": type_name, "params": params}, option=orjson.OPT_SORT_KEYS
    )
    return f"{type_name}-{hashlib.sha256(text).hexdigest()[:24]}"


class KeyedFactory(NamedFetcherFactory):
    """A shared type's factory that keys each fetcher it makes by its resource's name.

    ``for_resource(name, params)`` calls the type's own factory (its checks of
    ``params``) and hands that fetcher and the entry's key to ``make``.
    ``__call__`` (params alone) is refused: without the name, two resources of
    this type with equal params would share one store entry.
    """

    def __init__(
        self,
        factory: FetcherFactory,
        type_name: str,
        make: Callable[[Fetcher, str], Fetcher],
    ) -> None:
        self._factory = factory
        self._type = type_name
        self._make = make

    def __call__(self, params: dict[str, Any]) -> Fetcher:
        raise TypeError(f"a shared {self._type!r} fetcher is made for a named resource")

    def for_resource(
        self, name: str, params: dict[str, Any], declared: dict[str, Any] | None = None
    ) -> Fetcher:
        """The type's own fetcher (told ``name`` and ``declared`` too when it is a
        ``NamedFetcherFactory``: a fleet pod's), wrapped by ``make`` under ``name``'s key
        (of the resolved ``params``: the store is this host's)."""
        factory = self._factory
        if isinstance(factory, NamedFetcherFactory):
            inner = factory.for_resource(name, params, declared)
        else:
            inner = factory(params)
        return self._make(inner, entry_key(name, self._type, params))


def default_shared_parent() -> Path:
    """``/dev/shm`` when it exists (memory-backed on Linux), else the temporary directory."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


class StoreDirectory:
    """A store's directory and its manifest, read as both sides read it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest_path = self.path / MANIFEST_NAME

    def manifest(self) -> dict[str, dict[str, Any]]:
        """``key -> {"generation", "stem", "files"}`` as last published ({} before any)."""
        try:
            with open(self.manifest_path, "rb") as source:
                data = source.read(MANIFEST_MAX_BYTES + 1)  # bounded: one byte past the cap
        except FileNotFoundError:
            return {}
        if len(data) > MANIFEST_MAX_BYTES:
            raise SnapshotMissingError(
                f"{self.manifest_path}: over {MANIFEST_MAX_BYTES} bytes, not a manifest we wrote"
            )
        parsed = orjson.loads(data)
        if not isinstance(parsed, dict):
            raise SnapshotMissingError(f"{self.manifest_path}: not a manifest")
        return parsed

    def generation(self, key: str) -> int:
        """The newest published generation of ``key`` (0: none)."""
        entry = self.manifest().get(key)
        return 0 if entry is None else int(entry["generation"])
