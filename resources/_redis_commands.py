"""Per-command counts and latencies of one Redis client (Go's ``pine_redis_command_*``).

The Redis operators time every round trip and report each command in it
through the client's ``record_command(command, seconds, status)`` (see
``pineapple/operators/_redis.py``, which classifies the outcome); the
server reads :meth:`CommandStats.report` at scrape time and exposes
``pine_redis_command_total`` and ``pine_redis_command_duration_seconds``
with Go's labels ``name``, ``command``, ``status`` and Prometheus' default
buckets (Go's, as its metrics provider leaves them unset).

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

from pineapple.resource import LATENCY_BUCKETS

__all__ = ["MAX_COMMANDS", "STATUSES", "CommandCell", "CommandStats"]

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
