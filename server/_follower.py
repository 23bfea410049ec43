"""``Follower``: a worker's thread that maps newly published snapshots and watches its parent.

Each worker gets the read end of a pipe whose only write end the supervisor
holds. The follower waits on it at most ``poll_seconds`` at a time; between
waits it looks at the store's manifest (one ``stat``) and, when it changed,
refreshes every shared resource of the serving snapshot's Manager, whose
``MappedFetcher`` opens the new generation (or answers ``NOT_MODIFIED``).
So a publish reaches every worker within ``poll_seconds`` plus one open.

End-of-file on the pipe means the supervisor is gone (it died, even by
SIGKILL, because the kernel closes its descriptors): the worker then stops
itself with SIGTERM, so no worker keeps serving stale data without a parent.

Guarantees:
- The follower only reads the store and calls ``Manager.refresh``, whose
  ``refresh_lock`` serialises it with the Manager's own refreshes; it borrows
  the serving snapshot for the duration (``SnapshotHolder.acquire``), so a
  config reload cannot close that Manager under it.
- Every wait is bounded (``poll_seconds``); ``stop()`` returns within one wait.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from multiprocessing.connection import Connection

import resources
from pineapple import PineappleError

from ._shared import SharedStore
from ._snapshot import SnapshotHolder

__all__ = ["FOLLOW_POLL_SECONDS", "Follower"]

FOLLOW_POLL_SECONDS = 0.2
"""How often a worker looks for a newly published snapshot."""

_log = logging.getLogger("pineapple.server")


class Follower:
    """Maps new generations into ``holder``'s Manager; stops the process when the parent dies."""

    def __init__(
        self,
        store: SharedStore,
        holder: SnapshotHolder,
        parent: Connection,
        poll_seconds: float = FOLLOW_POLL_SECONDS,
    ) -> None:
        self._store = store
        self._holder = holder
        self._parent = parent
        self._poll = poll_seconds
        self._stop = threading.Event()
        self._seen: tuple[int, int, int] | None = None
        self._thread = threading.Thread(target=self._run, name="pineapple-follower", daemon=True)

    def start(self) -> None:
        """Start following (the first look happens after one poll)."""
        # _seen stays None: the first pass refreshes once, so a publish between the
        # service's start and this thread is not missed (an unchanged one is NOT_MODIFIED).
        self._thread.start()

    def stop(self) -> None:
        """Stop following; returns within one poll."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._poll * 5 + 1)

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._store.manifest_path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def _run(self) -> None:
        # Bounded: each pass waits at most ``poll`` seconds; ends on stop or parent EOF.
        while not self._stop.is_set():
            try:
                if self._parent.poll(self._poll):
                    self._parent.recv_bytes(64)  # notices are hints; the manifest is the truth
            except (EOFError, OSError):
                self._parent_gone()
                return
            signature = self._signature()
            if signature != self._seen:
                self._seen = signature
                self.follow()

    def follow(self) -> None:
        """Refresh every shared resource of the serving snapshot (opens new generations)."""
        snap = self._holder.acquire()
        if snap is None:
            return
        try:
            for status in snap.manager.status():
                if status.type not in resources.SHARED_TYPES:
                    continue
                try:
                    snap.manager.refresh(status.name)
                except PineappleError as exc:
                    _log.warning("cannot map the new snapshot of %r: %s", status.name, exc)
        finally:
            snap.release()

    def _parent_gone(self) -> None:
        if self._stop.is_set():
            return
        _log.error("the supervisor is gone; this worker stops (it would serve stale data)")
        os.kill(os.getpid(), signal.SIGTERM)
