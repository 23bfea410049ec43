"""``ReadWatch``: a read that hears nothing from the server for ``seconds`` is stopped.

psycopg has no socket read timeout (MySQL's driver has one: ``read_timeout``).
A PostgreSQL read therefore runs under a watch: the reader calls
:meth:`ReadWatch.beat` each time rows arrive (a chunk, the version query's
row), and a watcher thread runs the read's stop action (shut its socket
down, so the blocked read fails at once) when ``seconds`` pass without one.

Guarantees: one watcher thread per watched block, ended when the block exits
(its wait is cut short by an event; joined before the block returns); it
fires at most once; the action goes through a :class:`~resources._cancel.Cancel`
of its own, so it never runs after its block has exited.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from ._cancel import Cancel

__all__ = ["ReadWatch"]


class ReadWatch:
    """Runs an action once ``seconds`` pass without a :meth:`beat`.

    >>> watch = ReadWatch(60.0)
    >>> with watch.watching(lambda: None):
    ...     watch.beat()
    >>> watch.fired
    False
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = time.monotonic()
        self.fired = False
        """True once the watch ran its action (the read timed out)."""

    def beat(self) -> None:
        """Data came: the wait starts again."""
        self._last = time.monotonic()

    def _watch(self, stop: threading.Event, switch: Cancel) -> None:
        # bounded: each wait lasts at most `seconds`; the loop ends on stop or on firing
        while not stop.wait(max(0.0, self._last + self.seconds - time.monotonic())):
            if time.monotonic() - self._last >= self.seconds:
                self.fired = True
                switch.cancel()
                return

    @contextlib.contextmanager
    def watching(self, action: Callable[[], object]) -> Iterator[ReadWatch]:
        """Within the block, ``action`` runs when ``seconds`` pass without a beat."""
        self.beat()
        switch, stop = Cancel(), threading.Event()
        watcher = threading.Thread(
            target=self._watch, args=(stop, switch), name="pineapple-read-watch", daemon=True
        )
        with switch.on_cancel(action):
            watcher.start()
            try:
                yield self
            finally:
                stop.set()
                watcher.join()
