"""``Served``: what the metrics read of the snapshot that serves.

The wing sits below the snapshot (``server/_snapshot.py``), so it names what
it reads as a Protocol: the engine (its stats), the Manager (resource status,
probes, clients), the config's identity and the count of borrowers. A
``Snapshot`` is one; a test may pass anything with these attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pineapple import resource

__all__ = ["ConfigState", "Decided", "Served", "ServedConfig"]


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

    @property
    def serial(self) -> int: ...


@dataclass(frozen=True)
class ConfigState:
    """The serving config where a process decides it: its generation (one process: the
    snapshot's serial; a pod: the supervisor's config generation), its content hash and
    when it was accepted (Unix seconds)."""

    generation: int
    content_hash: str
    accepted_at: float


@dataclass(frozen=True)
class Decided:
    """What one process decides for the pod, as the metrics read it at scrape time.

    ``statuses``: the resources whose state this process decides (one process:
    all; a worker of ``--workers N``: its per-worker ones; the supervisor: the
    shared ones, which it fetches). ``config``: the serving config where this
    process decides it (None in a worker: its supervisor decides). So every
    series of the pod's state comes from one process, whichever worker answers.
    """

    statuses: Callable[[], Sequence[resource.ResourceStatus]]
    config: Callable[[], ConfigState | None]
    workers: Callable[[], tuple[int, int]] | None = None
    """The supervisor's: worker processes wanted and serving now (None elsewhere)."""
