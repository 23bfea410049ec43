"""The config watcher: file events on the config's directory, plus a slow poll.

Watching the *directory* (not the file) is what makes every way of replacing
a file visible: an in-place write modifies the file; an editor's rename-save
creates it anew (the old inode that a file watch would follow is gone); a
Kubernetes ConfigMap update swaps the ``..data`` symlink, and the config file
(itself a symlink through ``..data``) never changes at all. Events are
grouped (debounced) by watchfiles; the reloader's content hash turns the
spurious ones into no-ops. When no event arrives for ``poll_seconds`` the
watcher asks for a reload anyway, as a backstop for missed events (network
file systems, a symlink whose target lives elsewhere).

Guarantees:
- The OS watch is installed in :meth:`ConfigWatcher.start`, before it
  returns: a change made after ``start()`` is seen.
- ``on_change`` runs on the watcher's thread, one call at a time; an
  exception from it is logged and the watcher keeps going.
- :meth:`stop` returns after the thread has exited (within about one step),
  or after ``stop_timeout`` seconds when an ``on_change`` call is still
  running (the thread, a daemon, exits once that call returns: it tests the
  stop event before watching again).
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

# watchfiles' own watch() only installs the OS watch when first iterated; driving
# RustNotify directly lets start() install it before returning (pinned <2 in
# pyproject.toml; the watcher tests exercise it).
from watchfiles._rust_notify import RustNotify

from ._reload_policy import Trigger

__all__ = ["ConfigWatcher", "add_watch_flags"]

_log = logging.getLogger("pineapple.server")

_STEP_MS = 50


class ConfigWatcher:
    """Calls ``on_change("watch")`` on relevant events and ``on_change("poll")`` when idle."""

    def __init__(
        self,
        path: Path,
        on_change: Callable[[Trigger], object],
        *,
        debounce_seconds: float = 0.2,
        poll_seconds: float = 10.0,
        stop_timeout: float = 60.0,
    ) -> None:
        self._path = Path(os.path.abspath(path))
        self._dir = self._path.parent
        self._on_change = on_change
        self._debounce_ms = max(_STEP_MS, int(debounce_seconds * 1000))
        self._poll_ms = max(1, int(poll_seconds * 1000))
        self._stop_timeout = stop_timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._notify: RustNotify | None = None

    def start(self) -> None:
        """Install the watch on the config's directory and start the thread."""
        self._notify = RustNotify(
            [str(self._dir)],
            debug=False,
            force_polling=False,
            poll_delay_ms=300,  # unused without force_polling
            recursive=False,
            ignore_permission_denied=True,
        )
        self._thread = threading.Thread(target=self._run, name="pineapple-watcher", daemon=True)
        self._thread.start()
        _log.info("watching %s for changes to %s", self._dir, self._path.name)

    def stop(self) -> None:
        """Stop watching; returns once the thread has exited (or after ``stop_timeout``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._stop_timeout)
            if self._thread.is_alive():
                _log.warning(
                    "the config watcher is still in a reload after %gs; not waiting longer",
                    self._stop_timeout,
                )
                return  # the thread still holds the watch; it exits after that reload
            self._thread = None
        if self._notify is not None:
            self._notify.close()
            self._notify = None

    def _relevant(self, changed: str) -> bool:
        name = os.path.basename(changed)
        if name == self._path.name or name.startswith(".."):
            return True  # the file itself, or a ConfigMap's ..data / ..<timestamp> entries
        target = os.path.realpath(self._path)
        return os.path.dirname(target) == str(self._dir) and name == os.path.basename(target)

    def _run(self) -> None:
        notify = self._notify
        assert notify is not None
        while not self._stop.is_set():
            try:
                got = notify.watch(self._debounce_ms, _STEP_MS, self._poll_ms, self._stop)
            except Exception:
                _log.exception("watching %s failed; relying on the poll", self._dir)
                if self._stop.wait(self._poll_ms / 1000):
                    return
                got = "timeout"
            if got == "stop":
                return
            if got == "timeout":
                self._call("poll")
            elif isinstance(got, set) and any(self._relevant(p) for _, p in got):
                self._call("watch")

    def _call(self, trigger: Trigger) -> None:
        try:
            self._on_change(trigger)
        except Exception:
            _log.exception("config reload after a %s event failed", trigger)


def add_watch_flags(parser: argparse.ArgumentParser) -> None:
    """``--poll-seconds`` and ``--no-watch``: how a command that follows its config file
    (``serve``, ``publish``) notices an edit."""
    parser.add_argument(
        "--poll-seconds", type=float, default=10.0, help="re-read the config at least this often"
    )
    parser.add_argument("--no-watch", action="store_true", help="do not watch the config file")
