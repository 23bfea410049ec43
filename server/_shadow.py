"""``Shadow``: a staged candidate answers a share of live requests off the response path.

A staged candidate (``server/_stage.py``) is a :class:`Stage`: a snapshot
built and warmed like a reload's, never swapped in. While one is set on a
process's :class:`Shadow`, ``/execute``'s answer maker
(``server/http/_execute.py``) hands it every answered request; a share
(``--shadow-share``, or the stage's ``share``) is put on a bounded queue and
the shadow's own thread runs it on the candidate, compares the two answers
(``server/_shadow_compare.py``) and adds the difference to the stage's
:class:`~server._shadow_summary.ShadowSummary`. After each comparison and at
least every ``TICK_SECONDS`` the shadow calls its ``decide`` hook (one
process: the automatic thresholds and the stage's lifetime; a worker: its
report to the supervisor).

The hot path: with nothing staged, ``/execute`` pays one attribute test
(``Shadow.stage is None``). With a stage, a request outside the share pays
an addition and a comparison; one inside it a clock read around the live
answer and a non-blocking put.

Guarantees:
- Shadow work never holds a live request's deadline, slot or borrow: the live
  answer is made and returned as without a stage; the queue keeps the
  request's body and the live answer's bytes only, and the shadow's thread
  borrows the candidate (never the serving snapshot) under a deadline of its
  own (``--request-timeout-ms`` from when it starts the request).
- Shadow work is dropped first under load: the queue holds at most
  ``--shadow-queue`` requests (its length is tested and appended to under
  ``_put``, an uncontended lock held for two operations); a request offered
  to a full queue is dropped and counted (``dropped``,
  ``pineapple_shadow_requests_total{outcome="dropped"}``); the live request
  never waits for room, and the thread is never woken by a put (it polls the
  queue every ``POLL_SECONDS`` while a candidate is staged).
- ``stage`` is set and cleared under ``_lock``; the thread adds to a stage's
  summary under it only while that stage is still set, so a stage that has
  ended (promoted, aborted) counts nothing more, and a reader of
  :meth:`Shadow.summary` sees whole comparisons.
- Nothing here waits forever: the thread waits at most ``TICK_SECONDS`` for
  work and stops within that (plus the request it runs) of :meth:`close` (which waits at most
  ``CLOSE_SECONDS`` plus one candidate request's timeout for it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from pineapple import Context

from ._config import EngineLike, Responder
from ._shadow_compare import compare
from ._shadow_summary import ShadowSummary, Thresholds

__all__ = ["CLOSE_SECONDS", "POLL_SECONDS", "TICK_SECONDS", "Candidate", "Shadow", "Stage"]

_log = logging.getLogger("pineapple.server")
_monotonic = time.monotonic

TICK_SECONDS = 0.25
"""The longest the shadow's thread waits for work before it asks ``decide`` again."""
POLL_SECONDS = 0.02
"""How often the shadow's thread looks at an empty queue while a candidate is staged."""
CLOSE_SECONDS = 5.0
"""How long :meth:`Shadow.close` waits for the thread (plus one request's timeout)."""


class Candidate(Protocol):
    """What a shadowed request runs on: a staged config's ``Snapshot``, or the serving
    one with a staged refresh's value lent (``server/_resource_stage.py``)."""

    serial: int
    engine: EngineLike
    context: Context

    def acquire(self) -> bool:
        """Take one reference while the candidate is live; False once it is closing."""
        ...

    def release(self) -> None:
        """Drop one reference."""
        ...

    def retire(self) -> None:
        """Drop the stage's baseline reference (once)."""
        ...

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Wait until the candidate has closed; False on timeout."""
        ...


@dataclass(eq=False)
class Stage:
    """One staged candidate in one process: its snapshot, share and summary."""

    candidate: Candidate
    content_hash: str
    share: float
    thresholds: Thresholds
    summary: ShadowSummary
    staged_at: float = field(default_factory=time.time)
    expires: float = 0.0
    """Monotonic time at which the stage ends by its lifetime (0: never)."""
    resource: str | None = None
    """The resource whose staged refresh this is (None: a staged config)."""
    credit: float = 0.0
    """The share owed so far: a request is shadowed each time it reaches 1 (racy by design:
    two threads may both see it, which shadows one request more)."""


Offered = tuple[Stage, bytes, tuple[str, ...], tuple[int, bytes], float]
"""A queued request: its stage, body, group, the live answer and its seconds."""


class Shadow:
    """One process's shadow of its staged candidate (see module docs).

    ``respond``: how the candidate answers (the responder, without the request sample);
    ``queue_size``: ``--shadow-queue``; ``timeout``: a candidate request's seconds (None:
    none); ``observe``: counts an outcome (``same``, ``changed``, ``error``,
    ``both_failed``, ``dropped``) in the metrics.
    """

    def __init__(
        self,
        respond: Responder,
        queue_size: int,
        timeout: float | None,
        observe: Callable[[str], None] = lambda outcome: None,
    ) -> None:
        self.stage: Stage | None = None
        """The staged candidate (None: nothing staged; the hot path's one test)."""
        self.decide: Callable[[Stage], None] = lambda stage: None
        """Called on the thread after each comparison and every ``TICK_SECONDS``."""
        self._respond = respond
        self._timeout = timeout
        self._observe = observe
        self._queue: deque[Offered] = deque()
        self._queue_size = max(1, queue_size)
        self._put = threading.Lock()
        """Held for a length test and an append (so the queue never passes its size)."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the hot path (any thread) ------------------------------------------------------

    def answered(self, respond: Responder, args: tuple[Any, ...]) -> tuple[int, bytes]:
        """The live answer of ``respond(*args)``; a share of them also queued for the
        candidate (``args``: the engine, context, body and group of ``/execute``)."""
        stage = self.stage
        if stage is None:
            return respond(*args)  # ended since the caller looked
        stage.credit += stage.share
        if stage.credit < 1.0:
            return respond(*args)
        stage.credit -= 1.0
        began = _monotonic()
        answer: tuple[int, bytes] = respond(*args)
        seconds = _monotonic() - began
        with self._put:
            room = len(self._queue) < self._queue_size
            if room:
                self._queue.append((stage, args[2], tuple(args[3:]), answer, seconds))
        if not room:
            self._dropped(stage)
        return answer

    def _dropped(self, stage: Stage) -> None:
        with self._lock:
            if self.stage is stage:
                stage.summary.count["dropped"] += 1
        self._observe("dropped")

    # -- the stage ----------------------------------------------------------------------

    def begin(self, stage: Stage) -> None:
        """Shadow ``stage`` from now on (the caller holds no stage: end it first)."""
        with self._lock:
            assert self.stage is None, "a stage is already set"
            self.stage = stage
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._run, name="pineapple-shadow", daemon=True
                )
                self._thread.start()

    def end(self) -> Stage | None:
        """Stop shadowing; the stage that was set (its candidate is the caller's now)."""
        with self._lock:
            stage, self.stage = self.stage, None
        return stage

    def summary(self, stage: Stage | None = None) -> dict[str, Any] | None:
        """The summary of ``stage`` (default: the one set), read whole; None: none set."""
        with self._lock:
            stage = stage or self.stage
            return None if stage is None else stage.summary.to_dict()

    def counts(self, stage: Stage) -> dict[str, Any]:
        """:meth:`ShadowSummary.counts` of ``stage``, read whole (a worker's report)."""
        with self._lock:
            return stage.summary.counts()

    @property
    def queued(self) -> int:
        """Requests waiting for the candidate (racy: for status and tests)."""
        return len(self._queue)

    def close(self) -> Stage | None:
        """Stop the thread (bounded, see module docs); the stage that was set, if any
        (the caller retires its candidate)."""
        stage = self.end()
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(CLOSE_SECONDS + (self._timeout or 0.0))
            self._thread = None
        return stage

    # -- the thread ---------------------------------------------------------------------

    def _run(self) -> None:
        # Bounded: each turn takes one request or waits at most POLL_SECONDS (TICK_SECONDS
        # with nothing staged); the loop ends at close(). The queue is polled, not waited
        # on: a request put costs no wake-up of this thread (what a condition would cost).
        decided = 0.0
        while not self._stop.is_set():
            stage = self.stage
            try:
                offered: Offered | None = self._queue.popleft()
            except IndexError:
                offered = None
                self._stop.wait(TICK_SECONDS if stage is None else POLL_SECONDS)
            if offered is not None and offered[0] is stage:
                self._shadowed(*offered)
            now = _monotonic()
            if stage is not None and (offered is not None or now - decided >= TICK_SECONDS):
                decided = now
                try:
                    self.decide(stage)
                except Exception:
                    _log.exception("the shadow's decision failed")

    def _shadowed(
        self,
        stage: Stage,
        body: bytes,
        group: tuple[str, ...],
        live: tuple[int, bytes],
        live_seconds: float,
    ) -> None:
        snap = stage.candidate
        if not snap.acquire():
            return  # retired meanwhile: the stage has ended
        began = _monotonic()
        try:
            ctx = snap.context
            if self._timeout is not None:
                ctx = ctx.with_deadline(began + self._timeout)
            answer: tuple[int, bytes] = self._respond(snap.engine, ctx, body, *group)
        except Exception as exc:  # the candidate's responder failed: its error
            answer = 500, orjson.dumps({"error": f"internal error: {type(exc).__name__}"})
        finally:
            snap.release()
        seconds = _monotonic() - began
        diff = compare(live, answer)
        with self._lock:
            if self.stage is not stage:
                return
            stage.summary.add(diff, live_seconds, seconds)
        self._observe(diff.outcome)
