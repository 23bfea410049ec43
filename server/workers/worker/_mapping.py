"""The mapping side of the shared-snapshot store (a worker, and a trial build).

The store's layout, which both sides read, is ``server/workers/_store_format.py``;
the side that publishes is ``server/workers/supervisor/_publishing.py``. Here:
:class:`MappedStore` (a worker's view of the directory: open a published
snapshot, read the accepted config under a lease), and :class:`MappedFetcher`,
a shared type's fetcher in a worker, which opens the newest published
generation with the type's codec, or answers ``NOT_MODIFIED`` when it already
serves it; :func:`mapped_registry` makes one per shared entry of a config.
:class:`SnapshotSource` is the seam: what a ``MappedFetcher`` asks of a store.

Guarantees:
- A worker only reads the directory; what it may rely on is the format's
  (``_store_format``): a manifest is replaced whole and names only complete
  files.
- :meth:`MappedStore.read_config` holds a lease (``_config_leases``) on the
  config generation it returned until it reads a newer one, so the supervisor
  keeps every entry that generation names while this worker may build from it.
  ``_lease`` is swapped under ``_lock``; the old lease is closed after.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Protocol

from pineapple.resource import NOT_MODIFIED, Fetcher, Registry
from pineapple.resource.lowlevel import SnapshotCodec

from ..._config_read import ConfigFileError, read_config_file
from .._config_leases import take_lease
from .._store_format import CONFIG_ENTRY, KeyedFactory, SnapshotMissingError, StoreDirectory

__all__ = ["MappedFetcher", "MappedStore", "SnapshotSource", "mapped_registry"]

_CONFIG_READ_ATTEMPTS = 3
"""A worker reading the config retries this often when a newer publish unlinked its file."""


class SnapshotSource(Protocol):
    """What a :class:`MappedFetcher` asks of a store (``MappedStore`` is one)."""

    def generation(self, key: str) -> int:
        """The newest published generation of ``key`` (0: none)."""
        ...

    def open(self, key: str, codec: SnapshotCodec) -> tuple[int, Any]:
        """``(generation, value)`` of the newest snapshot of ``key``; ``SnapshotMissingError``
        when none is published."""
        ...


class MappedStore(StoreDirectory):
    """A worker's view of a store directory: it opens what the supervisor published.

    A :class:`SnapshotSource`.

    >>> MappedStore(path)                # doctest: +SKIP
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._lock = threading.Lock()
        self._lease: tuple[int, int] | None = None
        """``(generation, descriptor)`` of the config generation it last read."""

    def read_config(self, max_bytes: int) -> tuple[int, bytes]:
        """``(generation, bytes)`` of the newest accepted config; ``ConfigFileError`` if none."""
        # Bounded: _CONFIG_READ_ATTEMPTS tries; each loses only to a newer publish.
        for _ in range(_CONFIG_READ_ATTEMPTS):
            entry = self.manifest().get(CONFIG_ENTRY)
            if entry is None:
                break
            generation, path = int(entry["generation"]), self.path / str(entry["file"])
            try:
                lease = take_lease(path)  # held until this worker reads a newer generation
                try:
                    data = read_config_file(path, max_bytes)
                except BaseException:
                    os.close(lease)
                    raise
            except ConfigFileError:
                if self.manifest().get(CONFIG_ENTRY) == entry:
                    raise  # not replaced meanwhile: a real failure
                continue
            self._keep_lease(generation, lease)
            return generation, data
        raise ConfigFileError(self.path, "holds no config accepted by the supervisor")

    def _keep_lease(self, generation: int, fd: int) -> None:
        """Hold the lease on ``generation`` and release the one this worker held before."""
        with self._lock:
            old, self._lease = self._lease, (generation, fd)
        if old is not None:
            os.close(old[1])

    def open(self, key: str, codec: SnapshotCodec) -> tuple[int, Any]:
        """``(generation, value)`` of the newest snapshot of ``key``, opened with ``codec``."""
        entry = self.manifest().get(key)
        if entry is None:
            raise SnapshotMissingError(
                f"no shared snapshot of {key} in {self.path} (has the supervisor loaded it?)"
            )
        generation = int(entry["generation"])
        value = codec.open(self.path / str(entry["stem"]), generation)
        return generation, value


class MappedFetcher:
    """The newest published snapshot of ``key``, opened (never a source read).

    ``admitted_upstream``: the supervisor validated every published value and
    fitted it in its budget before publishing, so the worker's Manager serves
    it as it comes (no worker can refuse what the supervisor published).
    """

    admitted_upstream = True

    def __init__(self, store: SnapshotSource, key: str, codec: SnapshotCodec) -> None:
        self._store = store
        self.key = key
        self.codec = codec
        self.generation = 0

    def __call__(self) -> Any:
        if self.generation and self._store.generation(self.key) in (self.generation, 0):
            return NOT_MODIFIED  # unchanged, or no config names it any more (this one drains)
        generation, value = self._store.open(self.key, self.codec)
        self.generation = generation
        return value


def mapped_registry(base: Registry, store: SnapshotSource) -> Registry:
    """``base`` with every type that declares a codec read from ``store``, not its source."""
    registry = Registry()
    for schema in base.all():  # bounded: the registered types
        factory, codec = base.factory(schema.name), schema.codec
        if factory is None:
            continue
        if codec is not None:

            def mapped(inner: Fetcher, key: str, codec: SnapshotCodec = codec) -> Fetcher:
                # ``inner`` was made for the type's own checks of its params (no I/O).
                return MappedFetcher(store, key, codec)

            factory = KeyedFactory(factory, schema.name, mapped)
        registry.register(schema, factory)
    return registry
