"""``ParsedBytes``: the parse's share of ``--max-inflight-body-bytes``.

``/execute`` counts the raw bytes of the bodies it holds (``server/http/_execute.py``,
on the event loop). A body's parsed objects weigh more than its bytes (an 8 MB
body of ``{}`` items is about 200 MB of dicts), so the default responder also
reserves, before each part of a large body is parsed, a bound of what that
part will allocate (``pineapple.engine.http.ParseBudget``), from a worker
thread; the sum of both stays within the same cap, and a parse that would
pass it is answered 503 before its objects exist.

Guarantees:
- ``held`` changes only under ``_lock`` (worker threads reserve and give back
  concurrently); ``bodies`` (the event loop's count) is read without the lock:
  an int read is atomic, so a reserve sees a value the loop had at some
  instant.
- The cap holds within one reservation: the loop admits a body and a thread a
  parse without a common lock, so at the same instant both may pass, by at most
  one body (``--max-body-bytes``) plus one piece's bound (a 256 KiB piece: at
  most about 18 MB).
- Every reservation is given back when ``respond`` returns (its ``finally``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["ParsedBytes"]


class ParsedBytes:
    """Bytes of parsed request objects in progress, against the in-flight cap (None: none)."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.held = 0
        self.bodies: Callable[[], int] = lambda: 0
        """The raw body bytes /execute holds now (bound by the endpoint)."""
        self._lock = threading.Lock()

    def reserve(self, nbytes: int) -> bool:
        """Take ``nbytes`` (negative: give back); False, taking nothing, past the cap."""
        with self._lock:
            cap = self.cap
            if nbytes > 0 and cap is not None and self.bodies() + self.held + nbytes > cap:
                return False
            self.held += nbytes
            return True
