"""``RequestSample``: the recent live ``/execute`` requests a candidate config replays.

The server keeps the latest requests its serving snapshot answered ``200``
(the body and the pipeline group), in memory only, so that a reload can ask
a candidate config to answer them before it swaps (``server/_replay.py``).
It is filled by ``/execute``'s one answer maker
(``server/http/_execute.py``), so both of the edge's paths (the ASGI app and
the direct answers) record through one place. Under ``--workers N`` each worker keeps its own
and the supervisor collects them when it builds a candidate
(``server/workers/_sample_channel.py``).

Bounds (``--replay-sample-requests``, ``--replay-sample-bytes``,
``--replay-sample-seconds``): at most ``max_requests`` requests and
``max_bytes`` body bytes (the oldest go first; a body larger than
``max_bytes`` is never kept), none older than ``max_age`` seconds when read.
Recording is O(1) amortised under one lock held for a few list operations
(the responder runs on the event loop and on worker threads), and at most one
request is recorded per millisecond (``MIN_INTERVAL_SECONDS``): under load
an answered request costs a clock read and a comparison.

Guarantees:
- Only answered requests are kept (status 200): a candidate that fails one
  fails something the serving config answers.
- Nothing is written anywhere: the sample lives in the process's memory and
  leaves it only as :meth:`encode`'s bytes on the supervisor's private channel.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import orjson

__all__ = [
    "MIN_INTERVAL_SECONDS",
    "RequestSample",
    "SampleSource",
    "SampledRequest",
    "decode_sample",
]


_monotonic = time.monotonic

MIN_INTERVAL_SECONDS = 0.001
"""At most one request is recorded per interval (1,000 a second), so a loaded server
pays for a clock read per request, not for a record."""


@dataclass(frozen=True)
class SampledRequest:
    """One request to replay: its body and its pipeline group (None: the default one)."""

    body: bytes
    group: str | None = None
    at: float = 0.0
    """Monotonic time it was answered (0: a declared warm-up request)."""


class RequestSample:
    """The latest answered requests, bounded in count, bytes and age (see module docs)."""

    def __init__(self, max_requests: int, max_bytes: int, max_age: float) -> None:
        self.max_requests = max(0, max_requests)
        self.max_bytes = max(0, max_bytes)
        self.max_age = max_age
        self._kept: deque[tuple[bytes, str | None, float]] = deque()
        """(body, group, monotonic time answered), oldest first: tuples, cheap to make."""
        self._bytes = 0
        self._lock = threading.Lock()
        self._largest = self.max_bytes if self.enabled else -1
        """The largest body recorded (-1: none is)."""
        self.next_at = 0.0
        """The monotonic time before which nothing more is recorded (a caller that knows
        the time may skip the call: :meth:`record` checks it again)."""

    @property
    def enabled(self) -> bool:
        return self.max_requests > 0 and self.max_bytes > 0 and self.max_age > 0

    def record(self, body: bytes, group: str | None = None, now: float | None = None) -> None:
        """Keep ``body`` as the newest request (dropping the oldest past the bounds);
        ``now``: the monotonic time it was answered (None: read the clock)."""
        size = len(body)
        if now is None:
            now = _monotonic()
        if size > self._largest or now < self.next_at:
            return
        self.next_at = now + MIN_INTERVAL_SECONDS  # unlocked: at worst two in one interval
        entry = (body, group, now)
        with self._lock:
            kept = self._kept
            kept.append(entry)
            self._bytes += size
            # Bounded: each turn drops one of the entries kept.
            while len(kept) > self.max_requests or self._bytes > self.max_bytes:
                self._bytes -= len(kept.popleft()[0])

    def requests(self) -> list[SampledRequest]:
        """The kept requests younger than ``max_age``, oldest first."""
        cutoff = _monotonic() - self.max_age
        with self._lock:
            kept = self._kept
            while kept and kept[0][2] < cutoff:  # bounded by the entries kept
                self._bytes -= len(kept.popleft()[0])
            return [SampledRequest(*entry) for entry in kept]

    def encode(self) -> bytes:
        """The kept requests as bytes (newest first) for the supervisor's channel."""
        now = _monotonic()
        return orjson.dumps(
            [
                [r.body.decode("utf-8", "replace"), r.group, now - r.at]
                for r in reversed(self.requests())
            ]
        )


def decode_sample(data: bytes) -> list[tuple[SampledRequest, float]]:
    """:meth:`RequestSample.encode`'s bytes: each request and its age in seconds;
    ``ValueError`` when they are not such a list."""
    rows = orjson.loads(data)
    if not isinstance(rows, list):
        raise ValueError("a request sample is a list")
    out: list[tuple[SampledRequest, float]] = []
    for row in rows:
        if not (
            isinstance(row, list)
            and len(row) == 3
            and isinstance(row[0], str)
            and (row[1] is None or isinstance(row[1], str))
            and isinstance(row[2], int | float)
        ):
            raise ValueError("a sampled request is [body, group, age]")
        out.append((SampledRequest(row[0].encode(), row[1]), float(row[2])))
    return out


SampleSource = Callable[[], list[SampledRequest]]
"""Where a reload reads the requests to replay (the process's sample, or the pod's)."""
