"""A staged refresh: one resource's fetched value shadowed beside the serving snapshot.

``POST /admin/resources/{name}/refresh?stage=1`` (``pineapple admin stage
--resource NAME``) fetches a new value of ``name``, validated (and replayed,
for a ``replay`` entry) as a refresh's, without swapping it in
(``Manager.fetch_candidate``). The candidate the shadow runs
(``server/_shadow.py``) is a :class:`LentCandidate`: the serving snapshot with
that value lent in place of the live one (:func:`~server._value_replay.lend`,
as a value replay lends it). While it is staged, the stage's pin (:func:`hold`)
holds the resource: no timed or admin refresh swaps it (an admin's answers
409 naming the stage, as do its rollback, pin and unpin: the stage routes'
guard). Promote swaps the value in exactly as a refresh would
(``Manager.admit_candidate``); abort refuses it (``Valid=False``, check
``stage``: the unchanged source is not swapped in by the next fetch, a changed
one is) and drops it.

Guarantees:
- The candidate holds one reference of the serving snapshot (taken by the
  stage before it fetched), so the engine and every other resource a
  shadowed request borrows outlive it; the reference is released once, when
  the candidate closes.
- The candidate's own count (a ``RefValue``) is born with the stage's
  baseline reference; the shadow's thread acquires it around each request
  (``acquire`` fails once it has reached zero). :meth:`LentCandidate.retire`
  drops the baseline once; the last release runs :meth:`_Ending.close` once,
  on the closer thread: the value is dropped (its fetcher's ``discard``, then
  its ``close``) unless the stage promoted it, then the serving snapshot is
  released, then ``wait_closed`` returns True.
- A promoted value is handed to the Manager once the candidate has closed
  (no shadowed request borrows it), waited for at most ``wait`` seconds (the
  shadow's request is bounded by its own timeout); so the Manager is the only
  one that may close it afterwards.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pineapple import Context
from pineapple.resource.lowlevel import RefValue

from ._config import EngineLike
from ._snapshot import Snapshot
from ._value_replay import lend

__all__ = ["LentCandidate", "hold"]


def hold(name: str, at: float) -> str:
    """The pin of a staged refresh of ``name`` staged at ``at`` (what a refresh is told)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    return (
        f"a staged refresh of {name!r} is shadowed (staged at {stamp}): promote or abort it first"
    )


class _Ending:
    """The candidate's ``RefValue`` payload: its ``close`` ends the candidate once."""

    def __init__(self, candidate: LentCandidate) -> None:
        self._candidate = candidate

    def close(self) -> None:
        self._candidate._ended()


class LentCandidate:
    """``serving`` (one reference of it is the candidate's) with ``value`` lent for
    ``name``: what a shadowed request runs on (see module docs)."""

    def __init__(self, serving: Snapshot, name: str, value: Any, pin: str) -> None:
        self.serving = serving
        self.name = name
        self.value = value
        self.pin = pin
        """The stage's pin of ``name`` (:func:`hold`)."""
        self.version = serving.manager.version_of(name)
        """The serving version the candidate stands beside."""
        self.serial = serving.serial
        self.engine: EngineLike = serving.engine
        self.context: Context = lend(serving.context, serving.manager, name, value)
        self.promoted = False
        """Set before :meth:`retire` by a promote: the closing candidate keeps the value."""
        self._closed = threading.Event()
        self._retired = False
        self._lock = threading.Lock()
        self._ref = RefValue(_Ending(self), f"staged/{name}")
        self.acquire = self._ref.acquire
        self.release = self._ref.release

    def retire(self) -> None:
        """Drop the stage's baseline reference (once); the candidate closes after the last
        shadowed request."""
        with self._lock:
            if self._retired:
                return
            self._retired = True
        self._ref.release()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Wait until the candidate has closed; False on timeout."""
        return self._closed.wait(timeout)

    def promote(self, wait: float) -> int | None:
        """Swap the value in as a refresh would, once the candidate has closed (see module
        docs); the new version (None: the manager stopped). Raises what the swap raises."""
        self.promoted = True
        self.retire()
        self.wait_closed(wait)  # bounded; a shadowed request past it only reads the value
        return self.serving.manager.admit_candidate(self.name, self.value, self.pin)

    def abort(self, reason: str, wait: float) -> bool:
        """Refuse the value (check ``stage``) and lift the pin, then drop it once the last
        shadowed request has released it; whether it closed within ``wait`` seconds."""
        self.serving.manager.refuse_candidate(self.name, self.pin, reason)
        self.retire()
        return self.wait_closed(wait)

    def _ended(self) -> None:
        """The last release (on the closer thread, once): drop an unpromoted value, then
        release the serving snapshot."""
        try:
            if not self.promoted:
                self.serving.manager.drop_candidate(self.name, self.value)
        finally:
            self.serving.release()
            self._closed.set()

    def __repr__(self) -> str:
        return f"LentCandidate({self.name!r}, snapshot={self.serial})"
