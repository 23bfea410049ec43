"""``Served``: what the metrics read of the snapshot that serves.

The wing sits below the snapshot (``server/_snapshot.py``), so it names what
it reads as a Protocol: the engine (its stats), the Manager (resource status,
probes, clients), the config's identity and the count of borrowers. A
``Snapshot`` is one; a test may pass anything with these attributes.
"""

from __future__ import annotations

from typing import Protocol

from pineapple import resource

__all__ = ["Served", "ServedConfig"]


class ServedConfig(Protocol):
    """The identity of the config a snapshot was built from."""

    @property
    def content_hash(self) -> str: ...

    @property
    def loaded_at(self) -> float: ...


class Served(Protocol):
    """The serving snapshot, as the metrics read it."""

    @property
    def engine(self) -> object: ...

    @property
    def manager(self) -> resource.Manager: ...

    @property
    def info(self) -> ServedConfig: ...

    @property
    def refs(self) -> int: ...
