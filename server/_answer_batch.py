"""Direct answers of one turn of the event loop, written together at its end.

The event loop reads every connection that has data, one after the other, in
one turn. A direct ``/execute`` answer (``server/_direct.py``) is ready inside
its connection's read; written there and then, answers leave one engine run
apart, and a client reading many connections (a load balancer, a sidecar, a
load generator) is woken for each. Held to the end of the turn, the answers
of the turn leave together and the client is woken once for all of them.
uvicorn's own path has the same order (it reads every connection of the turn
before its tasks answer); the answers of a connection keep their order.

:class:`AnswerBatch` holds the connections with an answer waiting and writes
them all at the end of the turn (``loop.call_soon``, which runs after the
turn's reads). Bounds, so that holding never costs more than it saves:

- time: an answer is held at most :data:`HOLD_SECONDS` past its own
  completion plus one engine run: before each direct run the held answers
  are written when the batch is older than that, or when the latest direct
  run took longer than that (a slow run would make them wait);
- size: an answer (or a connection's answers) past :data:`HOLD_BYTES` is not
  held, so a connection's held bytes never exceed the transport's usual
  high-water mark, and a client that does not read is paused as before.

A connection writes what it holds itself before it writes or closes
anything else (a 408, a 400, a ``Connection: close`` answer, a hand-over to
the app), and drops it when lost. Event loop only, no lock.
"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from typing import Protocol

__all__ = ["HOLD_BYTES", "HOLD_SECONDS", "AnswerBatch", "HeldAnswers"]

HOLD_SECONDS = 0.0005
"""How long a ready answer may wait for the others of its turn."""

HOLD_BYTES = 64 * 1024
"""Bytes a connection may hold (asyncio's default write high-water mark)."""


class HeldAnswers(Protocol):
    """A connection with answers held (``server._direct.DirectProtocol``)."""

    def write_held(self) -> None:
        """Write what is held, if anything (and the connection is still open)."""


class AnswerBatch:
    """The connections with answers held in the current turn of one event loop."""

    __slots__ = ("_held", "_loop", "_since", "latest_run")

    def __init__(self) -> None:
        self._held: list[HeldAnswers] = []
        self._loop: AbstractEventLoop | None = None
        self._since = 0.0
        """When the batch's first answer was held (monotonic seconds)."""
        self.latest_run = 0.0
        """Seconds the latest direct answer took, from its headers (set by the connection)."""

    def hold(self, connection: HeldAnswers, loop: AbstractEventLoop, now: float) -> bool:
        """Add ``connection`` (its first held answer this turn) at ``now``; False: write it
        now instead (the batch belongs to another event loop, or is old enough)."""
        held = self._held
        if not held:
            self._loop, self._since = loop, now
            loop.call_soon(self.write)
        elif loop is not self._loop:  # bounded: one loop's connections in one batch
            return False
        held.append(connection)  # bounded: the connections read in one turn
        if now - self._since >= HOLD_SECONDS:
            self.write()
        return True

    def before_run(self, now: float) -> None:
        """A direct run starts at ``now``: write what is held if it would wait too long."""
        if self._held and (now - self._since >= HOLD_SECONDS or self.latest_run >= HOLD_SECONDS):
            self.write()

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def write(self) -> None:
        """Write every held answer (the end of the turn, or a bound reached)."""
        held, self._held = self._held, []
        for connection in held:  # bounded: the connections read in one turn
            connection.write_held()
