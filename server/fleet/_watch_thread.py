"""``WatchThread``: the thread of one watch, which both backends run (see ``FleetStore.watch``).

Guarantees:
- The callback runs on this thread only, one record at a time, in the order
  :meth:`WatchThread.follow` hands them over; never on a store's event loop,
  so it may call the store.
- Once :meth:`WatchThread.stop` began, no callback starts; when it returns,
  none runs (it waits for one in progress at most twice ``join_seconds``; a
  ``stop`` called from the callback itself returns at once).
- An exception from the callback is logged and the watch goes on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ._store import Record

__all__ = ["WatchThread"]

_log = logging.getLogger("pineapple.fleet")


class WatchThread:
    """Runs :meth:`follow` on its own thread until :meth:`stop`; subclasses fill ``follow``."""

    def __init__(
        self, bucket: str, on_change: Callable[[Record], None], *, join_seconds: float
    ) -> None:
        self.bucket = bucket
        self._on_change = on_change
        self._join_seconds = join_seconds
        self._lock = threading.Lock()
        """Held while the callback runs, and by ``stop`` (so no callback follows it)."""
        self.stopped = threading.Event()
        self._thread = threading.Thread(
            target=self.follow, name=f"fleet-watch-{bucket}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the watch: no callback after this returns (the thread joined, bounded)."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.stopping()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=self._join_seconds)
            # A callback still running past the join: wait for its end, as long again.
            if self._lock.acquire(timeout=self._join_seconds):
                self._lock.release()

    def stopping(self) -> None:
        """Hook: wake :meth:`follow` (called once by :meth:`stop`, before the join)."""

    def deliver(self, record: Record) -> None:
        """Call the callback with ``record`` (not after :meth:`stop`)."""
        with self._lock:
            if self.stopped.is_set():
                return
            try:
                self._on_change(record)
            except Exception:
                _log.exception("fleet watch of %s: the callback failed", self.bucket)

    def follow(self) -> None:
        """The thread's work: hand each record to :meth:`deliver` until ``stopped``."""
        raise NotImplementedError
