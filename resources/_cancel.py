"""``Cancel``: a one-way switch that stops a source's in-flight reads from another thread.

A read registers what would stop it (kill the loader child, shut the
connection's socket down so a blocked ``recv`` returns) for as long as it
runs; ``cancel()`` (the Manager calls it on stop, before it waits for running
fetches) flips the switch and runs every registered action. A read that
starts after ``cancel()`` has its action run at once, so it fails at once.

Guarantees:
- ``cancel()`` is idempotent and never blocks for long: actions run under
  ``_lock`` and must be non-blocking (a signal, a ``shutdown``); their
  ``OSError`` is ignored (the process or socket may already be gone).
- An action never runs after its ``on_cancel`` block has exited: register,
  unregister and the run of the actions all hold ``_lock``. So a reaped
  child's pid or a closed socket is never touched.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator

__all__ = ["Cancel"]


class Cancel:
    """Set once by :meth:`cancel`; runs the actions of the reads in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._actions: dict[int, Callable[[], object]] = {}
        self._ids = itertools.count()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Flip the switch and stop every read in flight (idempotent)."""
        with self._lock:
            self._cancelled = True
            for action in self._actions.values():
                with contextlib.suppress(OSError):
                    action()

    @contextlib.contextmanager
    def on_cancel(self, action: Callable[[], object]) -> Iterator[None]:
        """Within the block, :meth:`cancel` runs ``action`` (at once if already cancelled)."""
        key = next(self._ids)
        with self._lock:
            self._actions[key] = action
            if self._cancelled:
                with contextlib.suppress(OSError):
                    action()
        try:
            yield
        finally:
            with self._lock:
                del self._actions[key]
