"""Leadership: which of the producer replicas publishes, through the lease in the store.

Run the producer as two (or more) replicas: each :class:`Leadership` tries to
take the lease (``server/fleet/_lease.py``: a compare-and-set on the lease
key's revision). The one that gets it leads; the others are standbys that try
again every ``retry`` seconds and take over once the leader's lease lapses
(it stopped renewing: killed, hung, cut off from the store), so a standby
leads within ``ttl + retry`` of the leader's last renewal.

The leader renews on its own thread every ``ttl / 3`` seconds, whatever the
producer's loads are doing (a long first fetch cannot let the lease lapse).

Guarantees:
- :meth:`Leadership.held` is True only while the last successful acquire or
  renewal started less than ``ttl * HOLD_FRACTION`` seconds ago (monotonic)
  and no renewal was refused: the leader stops publishing a quarter of a
  ``ttl`` before any standby may take over, so a slow or unreachable store
  never lets two producers publish at once on the lease alone (the
  announcement's compare-and-set fences the rest, see ``_publishing.py``).
- A refused renewal (another holder) or a lapsed window sets :attr:`lost`
  and wakes the producer (``on_lost``); the leadership never becomes held
  again without a new :meth:`acquire`.
- Every wait is bounded: the renew thread waits ``ttl / 3`` between tries and
  each store call has the store's own deadline; :meth:`stop` joins the thread
  for at most ``ttl`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ._errors import FleetError
from ._lease import Lease
from ._store import FleetStore

__all__ = ["HOLD_FRACTION", "Leadership", "retry_seconds"]

HOLD_FRACTION = 0.75
"""Of a ``ttl`` since its last renewal, how long a leader still publishes."""

_log = logging.getLogger("pineapple.fleet")


def retry_seconds(ttl: float) -> float:
    """How often a standby tries to take the lease: a quarter of ``ttl``, 0.1 to 5 s."""
    return min(5.0, max(0.1, ttl / 4))


class Leadership:
    """The lease of one producer replica: acquire, renew on a thread, release."""

    def __init__(
        self,
        store: FleetStore,
        holder: str,
        ttl: float,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.holder = holder
        self.ttl = ttl
        self._lease = Lease(store, holder, ttl)
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._renewed_at: float | None = None
        """Monotonic start of the last successful acquire or renewal (None: not held)."""
        self.lost = threading.Event()
        """Set once a held lease was lost (refused, or not renewed in time)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def held(self) -> bool:
        """Whether this replica leads now (see Guarantees)."""
        with self._lock:
            at = self._renewed_at
        if at is None or self.lost.is_set():
            return False
        return time.monotonic() - at < self.ttl * HOLD_FRACTION

    def acquire(self) -> bool:
        """Try once to take the lease; on success start renewing it. Never raises a
        store error (an unreachable store: not acquired)."""
        started = time.monotonic()
        try:
            got = self._lease.acquire()
        except FleetError as exc:
            _log.warning("cannot take the producer lease: %s", exc)
            return False
        if not got:
            return False
        with self._lock:
            self._renewed_at = started
        self.lost.clear()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._renew_loop, name="pineapple-lease", daemon=True
        )
        self._thread.start()
        _log.info("leading: took the producer lease as %s (ttl %gs)", self.holder, self.ttl)
        return True

    def wait_for(self, stopping: threading.Event) -> bool:
        """As a standby: try every ``retry_seconds(ttl)`` until the lease is taken (True)
        or ``stopping`` is set (False)."""
        retry = retry_seconds(self.ttl)
        waited = False
        while not stopping.is_set():  # bounded by stopping; each try by the store's deadline
            if self.acquire():
                return True
            if not waited:
                _log.info("standing by: another producer holds the lease (retry every %gs)", retry)
                waited = True
            stopping.wait(retry)
        return False

    def _renew_loop(self) -> None:
        every = self.ttl / 3
        while not self._stop.wait(every):
            started = time.monotonic()
            try:
                renewed = self._lease.renew()
            except FleetError as exc:
                _log.warning("cannot renew the producer lease: %s", exc)
                renewed = None
            if renewed:
                with self._lock:
                    self._renewed_at = started
                continue
            if renewed is False or not self.held():
                self._lose("refused: another producer took it" if renewed is False else "lapsed")
                return

    def _lose(self, why: str) -> None:
        with self._lock:
            self._renewed_at = None
        self.lost.set()
        _log.error("lost the producer lease (%s): publishing nothing more", why)
        self._on_lost()

    def stop(self, *, release: bool) -> None:
        """Stop renewing; with ``release`` give the lease up at once (SIGTERM), so a
        standby need not wait for it to lapse."""
        with self._lock:
            was_held, self._renewed_at = self._renewed_at is not None, None
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.ttl)
        if release and was_held and not self.lost.is_set():
            try:
                self._lease.release()
            except FleetError as exc:
                _log.warning("cannot release the producer lease (it lapses in %gs): %s", self.ttl, exc)
                return
            _log.info("released the producer lease")
