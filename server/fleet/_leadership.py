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
- :meth:`Leadership.held` is the lease's own ``held()`` (``_lease.py``: True
  only until ``ttl`` after the start of the last successful acquire or
  renewal, so never past the ``expires`` a standby compares with) and no
  renewal was refused. A renewal that fails because the store is slow or
  down is tried again at the next tick while the lease is still held; once it
  is not, or once a renewal is refused, :attr:`lost` is set and the producer
  is woken (``on_lost``). If the leader's loop finds the lease lapsed
  before the renew thread does, :meth:`stop` sets :attr:`lost`; either way
  the loss is logged once, as an error. The announcement's compare-and-set fences the rest
  (``_publishing.py``).
- The leadership never becomes held again without a new :meth:`acquire`.
- Every wait is bounded: the renew thread waits ``ttl / 3`` between tries and
  each store call has the store's own deadline; :meth:`stop` joins the thread
  for at most ``ttl`` seconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ._errors import FleetError
from ._lease import Lease
from ._store import FleetStore

__all__ = ["Leadership", "retry_seconds"]

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
        self.lost = threading.Event()
        """Set once a held lease was lost (refused, or not renewed in time)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unreachable = False
        """The last acquire found the store unreachable (said once per outage)."""
        self._losing = threading.Lock()

    def held(self) -> bool:
        """Whether this replica leads now (see Guarantees)."""
        return self._lease.held() and not self.lost.is_set()

    def acquire(self) -> bool:
        """Try once to take the lease; on success start renewing it. Never raises a
        store error (an unreachable store: not acquired)."""
        try:
            got = self._lease.acquire()
        except FleetError as exc:
            if not self._unreachable:  # once per outage, not every retry
                _log.warning("cannot take the producer lease: %s", exc)
            self._unreachable = True
            return False
        if self._unreachable:
            _log.info("the store answers again")
        self._unreachable = False
        if not got:
            return False
        self.lost.clear()
        self._stop = threading.Event()  # one per thread: a late old thread never resumes
        self._thread = threading.Thread(
            target=self._renew_loop, args=(self._stop,), name="pineapple-lease", daemon=True
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

    def _renew_loop(self, stop: threading.Event) -> None:
        every = self.ttl / 3
        while not stop.wait(every):
            try:
                renewed = self._lease.renew()
            except FleetError as exc:
                _log.warning("cannot renew the producer lease: %s", exc)
                renewed = False
            if renewed:
                continue
            if not self._lease.held():  # refused, or not renewed within its ttl
                self._lose("another producer took it, or it lapsed")
                return
            _log.warning("cannot renew the producer lease yet; trying again in %gs", every)

    def _lose(self, why: str, *, wake: bool = True) -> None:
        """Mark the lease lost and say so, once (the renew thread and :meth:`stop`
        may both find it gone); with ``wake``, wake the producer."""
        with self._losing:
            if self.lost.is_set():
                return
            self.lost.set()
        _log.error("lost the producer lease (%s): publishing nothing more", why)
        if wake:
            self._on_lost()

    def stop(self, *, release: bool) -> None:
        """Stop renewing; with ``release`` give the lease up at once (SIGTERM), so a
        standby need not wait for it to lapse."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.ttl)
            if not release and not self._lease.held():
                # It lapsed before the renew thread found out: the leader's loop saw it
                # first (``held``). Said all the same, so a lost lease is always logged.
                self._lose("it lapsed before a renewal got through", wake=False)
        if release and self._lease.held():
            try:
                self._lease.release()
            except FleetError as exc:
                _log.warning("cannot release the producer lease (it lapses by itself): %s", exc)
                return
            _log.info("released the producer lease")
