"""``LoadDeadline``: the one total bound of a ``feed_data`` load, whichever loader runs it.

A load (version query, connect, query, every row, the build) must end within
``load_timeout_ms``. A read timeout alone cannot bound it: a query that sends
one row a second never leaves a read waiting for long. At the deadline,
:meth:`LoadDeadline.on_expiry` runs the action the read registered, the same
one a cancel runs (kill the loader child, or shut the connection's socket
down, so a blocked read fails at once), from a timer thread; the build's
pauses check :attr:`LoadDeadline.expired` between pieces.

Guarantees: the timer flips a :class:`~resources._cancel.Cancel` of its own,
so an action never runs after its ``on_expiry`` block has exited (see
``_cancel``); the timer is cancelled when the block exits, so no timer thread
outlives its read for long (``threading.Timer.cancel`` ends its wait at once).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from ._cancel import Cancel

__all__ = ["DEFAULT_LOAD_SECONDS", "LoadDeadline"]

DEFAULT_LOAD_SECONDS = 300.0
"""A load's bound unless set (``load_timeout_ms`` of ``feed_data``: 300,000)."""


class LoadDeadline:
    """``seconds`` from now; ``on_expiry(action)`` runs ``action`` when they have passed.

    >>> deadline = LoadDeadline(60.0)
    >>> deadline.expired, 59.0 < deadline.remaining() <= 60.0
    (False, True)
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (0 once expired)."""
        return max(0.0, self._end - time.monotonic())

    @property
    def expired(self) -> bool:
        """True once the deadline has passed."""
        return time.monotonic() >= self._end

    def text(self) -> str:
        """What a load stopped by this deadline says."""
        return f"load timed out after {self.seconds:g}s (load_timeout_ms)"

    @contextlib.contextmanager
    def on_expiry(self, action: Callable[[], object]) -> Iterator[None]:
        """Within the block, ``action`` runs at the deadline (at once if already past)."""
        switch = Cancel()
        timer = threading.Timer(self.remaining(), switch.cancel)
        timer.daemon = True
        timer.name = "pineapple-load-deadline"
        with switch.on_cancel(action):
            timer.start()
            try:
                yield
            finally:
                timer.cancel()
