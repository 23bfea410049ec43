"""Connection-pool and per-command metrics of a resource value that is a client.

A value that holds a pool of connections to a server (a Redis client) and
sends commands on behalf of operators keeps a :class:`CommandStats`, has
every command recorded in it (``record(command, seconds, status)``; the
Redis operators do it, see ``pineapple/operators/_redis.py``) and exposes
``client_report()`` (:class:`Metered`). The server reads the report at scrape
time, without I/O, and exports Go's families for the report's ``kind``:
``pine_<kind>_pool_total_conns`` / ``pine_<kind>_pool_idle_conns`` (gauges),
``pine_<kind>_command_total`` and ``pine_<kind>_command_duration_seconds``
(labels ``name``, ``command``, ``status``; Prometheus' default buckets, as Go's).
A plugin's client type opts in the same way; the server names no type.

Guarantees:
- ``_lock`` guards ``_cells``: a recorder (any request thread) and a reader
  (the scrape) never see a cell half-updated, with or without the GIL. The
  lock is held for a dict lookup and a few adds, never across I/O.
- ``_cells`` is bounded: at most ``len(STATUSES)`` cells per command name,
  and command names come from operator code (``GET``, ``SET``, ...), never
  from request data; a name past ``MAX_COMMANDS`` distinct ones is counted
  as ``OTHER``.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._probe import LATENCY_BUCKETS

__all__ = [
    "MAX_COMMANDS",
    "STATUSES",
    "ClientReport",
    "CommandCell",
    "CommandStats",
    "Metered",
    "client_report_of",
]

STATUSES = ("ok", "timeout", "pool_timeout", "error")
"""Go's ``status`` label values: a cache miss is ``ok``."""
MAX_COMMANDS = 64
"""Distinct command names kept per client; further ones are counted as ``OTHER``."""


@dataclass(frozen=True)
class CommandCell:
    """One (command, status) pair: how many, total seconds, per-bucket counts (not cumulative;
    ``buckets[i]`` counts observations <= ``LATENCY_BUCKETS[i]``, the last one past every bound)."""

    command: str
    status: str
    count: int
    sum_seconds: float
    buckets: tuple[int, ...]


class CommandStats:
    """Thread-safe (command, status) counters of one client (see the module's Guarantees)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (command, status) -> [count, sum_seconds, bucket counts...]
        self._cells: dict[tuple[str, str], list[float]] = {}
        self._commands: set[str] = set()

    def record(self, command: str, seconds: float, status: str) -> None:
        """One command ended with ``status`` (one of :data:`STATUSES`) after ``seconds``."""
        if status not in STATUSES:
            raise ValueError(f"redis command status must be one of {STATUSES}, got {status!r}")
        command = command.upper()
        bucket = 2 + bisect_left(LATENCY_BUCKETS, seconds)
        with self._lock:
            if command not in self._commands:
                if len(self._commands) >= MAX_COMMANDS:
                    command = "OTHER"
                self._commands.add(command)
            cell = self._cells.get((command, status))
            if cell is None:
                cell = self._cells[(command, status)] = [0.0] * (len(LATENCY_BUCKETS) + 3)
            cell[0] += 1
            cell[1] += seconds
            cell[bucket] += 1

    def report(self) -> list[CommandCell]:
        """Every (command, status) seen so far, sorted."""
        with self._lock:
            cells = sorted((key, list(cell)) for key, cell in self._cells.items())
        return [
            CommandCell(command, status, int(c[0]), c[1], tuple(int(n) for n in c[2:]))
            for (command, status), c in cells
        ]


@dataclass(frozen=True)
class ClientReport:
    """One client's pool and commands now. No secrets.

    ``kind`` names the metric families (``redis`` -> ``pine_redis_command_total``);
    ``label`` is the ``name`` label (empty: the runtime uses the resource name).
    """

    kind: str
    label: str
    total_conns: int
    idle_conns: int
    commands: tuple[CommandCell, ...]


@runtime_checkable
class Metered(Protocol):
    """A resource value that reports its pool and commands (see the module docs)."""

    def client_report(self) -> ClientReport:
        """The current report; cheap, no I/O."""
        ...


def client_report_of(value: Any) -> ClientReport | None:
    """``value.client_report()`` when the value reports one, else None."""
    if isinstance(value, Metered):
        return value.client_report()
    return None
