"""``Lease``: one holder at a time of a key in ``LEASES`` (the leading producer).

The record is ``{"holder": str, "expires": float}`` (unix seconds). A
candidate takes the lease by a compare-and-set: create when there is none,
or replace an expired holder's record at the revision it read; the holder
renews by a compare-and-set at the revision it wrote, and releases by
writing ``expires: 0`` the same way.

Guarantees:
- At most one candidate's acquire or renew succeeds per revision (the
  store's compare-and-set), so two holders never both believe they renewed
  the same lease: a renew after another took over returns False.
- :meth:`Lease.held` is True only while this process's own deadline has not
  passed: ``ttl`` seconds after the start of the request that took or renewed
  the lease (measured on the monotonic clock, started *before* the request, so
  it ends no later than the stored ``expires`` as the taker sees it, with the
  hosts' clocks in step). A holder that cannot renew (store down, lost) stops
  acting before a standby may take over.
- A takeover compares wall clocks of two hosts: keep them in sync (NTP) and
  ``ttl`` well above their skew.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import orjson

from ._errors import FleetError, RevisionConflictError, StoreUnavailableError
from ._store import LEASES, FleetStore, Record

__all__ = ["PRODUCER_LEASE", "Lease"]

PRODUCER_LEASE = "producer"
"""The key of the producers' lease."""


class Lease:
    """The lease ``key`` in ``LEASES`` for ``holder`` (see the module's Guarantees).

    >>> lease = Lease(store, "producer-a", ttl=10.0)   # doctest: +SKIP
    >>> lease.acquire()                                 # doctest: +SKIP
    True
    """

    def __init__(
        self,
        store: FleetStore,
        holder: str,
        ttl: float,
        *,
        key: str = PRODUCER_LEASE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not holder:
            raise FleetError("a lease holder needs a name")
        if not ttl > 0:
            raise FleetError(f"lease {key}: ttl must be > 0, got {ttl!r}")
        self.store = store
        self.holder = holder
        self.ttl = ttl
        self.key = key
        self._clock = clock
        """The wall clock of ``expires`` (tests move it)."""
        self._revision = 0
        """The revision this holder last wrote (0: not held)."""
        self._until = 0.0
        """``time.monotonic()`` deadline of the lease as this process holds it."""

    def _value(self, expires: float) -> bytes:
        return orjson.dumps({"holder": self.holder, "expires": expires})

    def _parse(self, record: Record) -> tuple[str, float]:
        try:
            doc = orjson.loads(record.value)
            return str(doc["holder"]), float(doc["expires"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return "", 0.0  # a malformed lease counts as expired

    def _write(self, revision: int) -> bool:
        started = time.monotonic()
        try:
            self._revision = self.store.update(
                LEASES, self.key, self._value(self._clock() + self.ttl), revision=revision
            )
        except RevisionConflictError:
            self._revision, self._until = 0, 0.0
            return False
        self._until = started + self.ttl
        return True

    def acquire(self) -> bool:
        """Take the lease if it is free, expired, or already this holder's; True when held."""
        record = self.store.get(LEASES, self.key)
        if record is None:
            return self._write(0)
        holder, expires = self._parse(record)
        if holder == self.holder or expires < self._clock():
            return self._write(record.revision)
        return False

    def renew(self) -> bool:
        """Extend the lease; False when it was lost (another holder, or the store down)."""
        if not self._revision:
            return False
        try:
            return self._write(self._revision)
        except StoreUnavailableError:
            return False

    def held(self) -> bool:
        """This holder holds the lease and its own deadline has not passed."""
        return bool(self._revision) and time.monotonic() < self._until

    def release(self) -> None:
        """Give the lease up (expired at once, so a standby takes it without waiting)."""
        if not self._revision:
            return
        revision, self._revision, self._until = self._revision, 0, 0.0
        # Lost already, or the store is down: then it expires by itself.
        with contextlib.suppress(RevisionConflictError, StoreUnavailableError):
            self.store.update(LEASES, self.key, self._value(0.0), revision=revision)
