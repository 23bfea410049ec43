"""``FleetFollower``: a pod's thread that wakes a resource's refresh when the fleet changes it.

It watches :data:`ANNOUNCEMENTS` and :data:`PINS` (and :data:`CONFIG` when the pod
serves the fleet's config): a change of a key is a resource name whose
refresh it runs at once (``refresh(name)``: the Manager's refresh, whose
:class:`~server.fleet._consumer.FleetFetcher` then reads the new generation or
answers ``NOT_MODIFIED``); a change of the config reloads it (``reload()``,
the reload policy's "watch" trigger: unchanged bytes are a no-op, refused
bytes are not tried again). A watch delivers the current values first, so a
(re)started watch catches up with everything.

Besides the watch, every ``poll_seconds`` it probes the store (one small
read) and refreshes every fleet resource: a slow backstop. When the store
does not answer (the probe, or a fetch that marked a resource stale), it
closes the connection and opens it again after a bounded backoff
(``RETRY_SECONDS`` doubling up to ``RETRY_MAX_SECONDS``), watches again, and so
catches up once the store returns.

Guarantees:
- ``refresh`` and ``reload`` run on this thread only, one at a time: the
  store's watch threads only record which keys changed (``_dirty``, under
  ``_wake``) and wake it, so a slow download never blocks a watch.
- Every wait is bounded (``poll_seconds``, the retry delay); :meth:`stop`
  returns within one refresh plus the store's deadline to stop its watches.
- A failure of a refresh, a reload, a probe or a watch is logged and the
  loop goes on: the pod keeps serving what it has.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable

from pineapple import PineappleError

from ._link import StoreLink
from ._store import ANNOUNCEMENTS, CONFIG, CONFIG_KEY, PINS, FleetStore, Record, Watch

__all__ = ["POLL_SECONDS", "RETRY_MAX_SECONDS", "RETRY_SECONDS", "FleetFollower"]

POLL_SECONDS = 30.0
"""The backstop: how often a follower probes the store and refreshes every fleet resource."""
RETRY_SECONDS = 0.5
"""The first wait before the store is opened again after it stopped answering."""
RETRY_MAX_SECONDS = 5.0
"""The longest such wait (while the store is down, it is tried this often)."""

_CONFIG_DIRTY = "\x00config"
"""The mark of a config change in ``_dirty`` (no resource name holds a NUL)."""

_log = logging.getLogger("pineapple.fleet")


def _watch(store: FleetStore, *, bucket: str, on_change: Callable[[Record], None]) -> Watch:
    return store.watch(bucket, on_change)


class FleetFollower:
    """Wakes ``refresh(name)`` and ``reload()`` on fleet changes (see module docs).

    ``names()``: the resources the pod reads from the fleet (the poll refreshes
    them all); ``stale()``: whether some of them could not be confirmed (the
    store is then tried again soon); ``reload`` None: the pod has its own
    config file, the fleet's is not followed.
    """

    def __init__(
        self,
        link: StoreLink,
        refresh: Callable[[str], object],
        names: Callable[[], list[str]],
        stale: Callable[[], bool],
        reload: Callable[[], object] | None = None,
        *,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._link = link
        self._refresh = refresh
        self._names = names
        self._stale = stale
        self._reload = reload
        self._poll = max(0.05, poll_seconds)
        self._wake = threading.Condition()
        self._dirty: set[str] = set()
        self._stop = threading.Event()
        self._watches: list[Watch] = []
        self._retry = RETRY_SECONDS
        self.passes = 0
        """Passes over dirty keys so far (tests wait on it)."""
        self._thread = threading.Thread(target=self._run, name="pineapple-fleet", daemon=True)

    def start(self) -> None:
        """Start following (watch first; a store that is down is tried again soon)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop following and the watches."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._poll + 30)
        self._unwatch()

    def nudge(self) -> None:
        """Wake the thread to look at the store now (it stopped answering)."""
        with self._wake:
            self._wake.notify_all()

    def wake(self, key: str) -> None:
        """Mark ``key`` (a resource name) changed and wake the thread."""
        with self._wake:
            self._dirty.add(key)
            self._wake.notify_all()

    # -- the store's watch threads --------------------------------------------------------

    def _on_resource(self, record: Record) -> None:
        self.wake(record.key)

    def _on_config(self, record: Record) -> None:
        if record.key == CONFIG_KEY:
            self.wake(_CONFIG_DIRTY)

    # -- this thread ---------------------------------------------------------------------

    def _run(self) -> None:
        # Bounded: each wait lasts at most the poll or the retry delay; ends on stop().
        next_poll = time.monotonic() + self._poll
        while not self._stop.is_set():
            if not self._watches and not self._watch():
                self._wait(self._backoff())
                continue
            now = time.monotonic()
            if now >= next_poll:
                next_poll = now + self._poll
                if not self._probe():
                    continue
                self._mark_all()
            self._run_dirty()
            if self._stale() or self._link.down:  # the store does not answer: again, soon
                self._wait(self._backoff())
                self._reopen("a resource could not be confirmed")
                continue
            self._wait(max(0.0, min(next_poll - time.monotonic(), self._poll)))

    def _wait(self, seconds: float) -> None:
        with self._wake:
            if not self._dirty and not self._stop.is_set():
                self._wake.wait(seconds)

    def _backoff(self) -> float:
        delay, self._retry = self._retry, min(RETRY_MAX_SECONDS, self._retry * 2)
        return delay

    def _watch(self) -> bool:
        """Open the store and watch its buckets; whether it could."""
        buckets = [(ANNOUNCEMENTS, self._on_resource), (PINS, self._on_resource)]
        if self._reload is not None:
            buckets.append((CONFIG, self._on_config))
        try:
            for bucket, on_change in buckets:  # bounded: three buckets
                watch = functools.partial(_watch, bucket=bucket, on_change=on_change)
                self._watches.append(self._link.run(watch, probe=True))
        except Exception as exc:  # whatever a broken connection raises: tried again soon
            self._unwatch()
            self._link.reset()
            _log.warning("cannot watch the fleet store (tried again soon): %s", exc)
            return False
        self._retry = RETRY_SECONDS
        self._mark_all()  # what changed while nobody watched
        _log.info("following the fleet store %s", self._link.url)
        return True

    def _probe(self) -> bool:
        """One small read: whether the store answers (else the watches are opened again)."""
        try:
            self._link.run(lambda store: store.get(CONFIG, CONFIG_KEY), probe=True)
        except Exception as exc:  # whatever a broken connection raises: opened again
            self._reopen(str(exc))
            return False
        return True

    def _reopen(self, why: str) -> None:
        _log.warning(
            "the fleet store %s does not answer (%s); opening it again", self._link.url, why
        )
        self._unwatch()
        self._link.reset()

    def _unwatch(self) -> None:
        watches, self._watches = self._watches, []
        for watch in watches:
            try:
                watch.stop()
            except Exception as exc:  # a watch of a broken connection: nothing more to stop
                _log.debug("stopping a fleet watch: %s", exc)

    def _mark_all(self) -> None:
        with self._wake:
            self._dirty.update(self._names())
            if self._reload is not None:
                self._dirty.add(_CONFIG_DIRTY)

    def _run_dirty(self) -> None:
        with self._wake:
            dirty, self._dirty = self._dirty, set()
        if not dirty:
            return
        if _CONFIG_DIRTY in dirty and self._reload is not None:
            dirty.discard(_CONFIG_DIRTY)
            self._call("the config reload", self._reload)
        for name in sorted(dirty):  # bounded: the keys that changed
            if self._stop.is_set():
                return
            self._call(f"the refresh of {name!r}", functools.partial(self._refresh, name))
        self.passes += 1

    def _call(self, what: str, call: Callable[[], object]) -> None:
        try:
            call()
        except PineappleError as exc:
            _log.info("fleet change: %s: %s", what, exc)
        except Exception:
            _log.exception("fleet change: %s failed", what)
