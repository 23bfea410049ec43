"""The closer: retired resource values are closed on one background thread.

A reader that drops the last reference to a retired value must not pay for
``close()`` (a connection pool's teardown can block), so the last release only
enqueues the value; the closer thread calls ``close()`` and logs any error.

Guarantees:
- every value handed to :func:`schedule_close` is closed at most once: the
  caller (``RefValue``) hands it over exactly once, when its count reaches 0;
- :func:`flush` returns only after every value scheduled before the call has
  been closed (or its close has failed and been logged);
- the thread is a daemon, started lazily, restarted after ``fork``; values
  still queued at interpreter exit are closed by an ``atexit`` flush.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from ._hooks import call_hook, hook_of

__all__ = ["add_release_hook", "close_now", "flush", "schedule_close"]


_lock = threading.Lock()
_queue: queue.SimpleQueue[tuple[str, Any] | threading.Event] = queue.SimpleQueue()
_thread: threading.Thread | None = None
_release_hooks: list[Callable[[Any], None]] = []


def add_release_hook(hook: Callable[[Any], None]) -> None:
    """Call ``hook(value)`` when a value's last reference is gone, before it is closed.

    The memory budget registers one (it stops counting the value); a hook
    runs on the releasing thread, so it must be quick and must not raise.
    Registered at import; adding the same hook twice is a no-op.
    """
    with _lock:
        if hook not in _release_hooks:
            _release_hooks.append(hook)


def close_now(label: str, value: Any) -> None:
    """Call ``value.close()`` if it has one; log (never raise) what it raises."""
    call_hook(value, "close", label=f"closing {label}", level=logging.ERROR)


def _run() -> None:
    while True:
        item = _queue.get()
        if isinstance(item, threading.Event):
            item.set()
            continue
        close_now(*item)


def _ensure_thread() -> None:
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="pineapple-closer", daemon=True)
            _thread.start()


def schedule_close(label: str, value: Any) -> None:
    """Hand ``value`` to the closer thread (a no-op for values without ``close``).

    Called by ``RefValue`` when a value's last reference is gone: the
    release hooks run first (the memory budget stops counting it).
    """
    for hook in _release_hooks:
        hook(value)
    if hook_of(value, "close") is None:
        return
    _ensure_thread()
    _queue.put((label, value))


def flush(timeout: float | None = None) -> bool:
    """Wait until every close scheduled before this call is done; False on timeout."""
    _ensure_thread()
    done = threading.Event()
    _queue.put(done)
    return done.wait(timeout)


def _after_fork() -> None:
    global _thread, _queue
    _thread = None
    _queue = queue.SimpleQueue()


os.register_at_fork(after_in_child=_after_fork)
atexit.register(flush, 10.0)
