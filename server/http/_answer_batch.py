"""Direct answers of one turn of the event loop, written together at its end.

The event loop reads every connection that has data, one after the other, in
one turn. A direct ``/execute`` answer (``server/http/_direct.py``) is ready inside
its connection's read; written there and then, answers leave one engine run
apart, and a client reading many connections (a load balancer, a sidecar, a
load generator) is woken for each. Held to the end of the turn, the answers
of the turn leave together and the client is woken once for all of them.
uvicorn's own path has the same order (it reads every connection of the turn
before its tasks answer); the answers of a connection keep their order.

:class:`AnswerBatch` holds the turn's answers, each with its transport, and
writes them in order at the end of the turn (``loop.call_soon``, which runs
after the turn's reads). Bounds, so that holding never costs more than it
saves:

- time: an answer is held at most :data:`HOLD_SECONDS` past its own
  completion plus one engine run: before each direct run the held answers
  are written when the batch is older than that, or when the latest direct
  run took longer than that (a slow run would make them wait);
- size: a batch holds at most :data:`HOLD_BYTES` (asyncio's default write
  high-water mark); an answer past it is not held. A client that does not
  read is paused as before: its connection's transport gets the bytes at
  the turn's end at the latest.

A connection has the batch written before it writes or closes anything else
(a 408, a 400, a ``Connection: close`` answer, a hand-over to the app); a
held answer whose transport is closing by the end of the turn is dropped.
Event loop only, no lock.
"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from time import monotonic
from typing import Protocol

__all__ = ["HOLD_BYTES", "HOLD_SECONDS", "AnswerBatch", "Writable"]

HOLD_SECONDS = 0.0005
"""How long a ready answer may wait for the others of its turn."""

HOLD_BYTES = 64 * 1024
"""Bytes a batch may hold (asyncio's default write high-water mark)."""


class Writable(Protocol):
    """What a batch needs of a transport (uvloop's are not ``asyncio.Transport`` subclasses
    in C, which compiled code checks: a protocol is not checked)."""

    def is_closing(self) -> bool: ...

    def write(self, data: bytes) -> None: ...


class AnswerBatch:
    """The answers held in the current turn of one event loop, with their transports."""

    def __init__(self) -> None:
        self._transports: list[Writable] = []
        self._answers: list[bytes] = []
        self._bytes = 0
        self._loop: AbstractEventLoop | None = None
        self._since = 0.0
        """When the batch's first answer was held (monotonic seconds)."""
        self._latest_run = 0.0
        """Seconds the latest answer offered to :meth:`hold` took, from its headers."""

    @property
    def holding(self) -> bool:
        return bool(self._answers)

    def hold(
        self,
        transport: Writable,
        answer: bytes,
        loop: AbstractEventLoop,
        started: float,
        now: float,
    ) -> bool:
        """Hold ``answer``, ready at ``now`` for a request whose headers were complete at
        ``started``. False: the caller writes it now (it is past the size bound, or the
        batch belongs to another event loop)."""
        self._latest_run = now - started
        size = len(answer)
        if self._answers:
            if loop is not self._loop:  # a batch is one loop's: its transports, its turn
                return False
            if self._bytes + size > HOLD_BYTES:
                self.write()
        if not self._answers:
            if size > HOLD_BYTES:
                return False
            self._loop, self._since = loop, now
            loop.call_soon(self.write)
        self._transports.append(transport)  # bounded: HOLD_BYTES, HOLD_SECONDS
        self._answers.append(answer)
        self._bytes += size
        if now - self._since >= HOLD_SECONDS:
            self.write()
        return True

    def before_run(self) -> None:
        """A direct run starts: write what is held if it would wait too long."""
        if self._answers and (
            self._latest_run >= HOLD_SECONDS or monotonic() - self._since >= HOLD_SECONDS
        ):
            self.write()

    def write(self) -> None:
        """Write every held answer, in order (the end of the turn, or a bound reached)."""
        transports, answers = self._transports, self._answers
        if not answers:
            return
        self._transports, self._answers, self._bytes = [], [], 0
        for i, transport in enumerate(transports):  # bounded: HOLD_BYTES
            if not transport.is_closing():
                transport.write(answers[i])
