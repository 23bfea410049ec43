"""When a resource is fetched next: its interval with jitter, or capped backoff after failures."""

from __future__ import annotations

import random

from ._slot import Slot

__all__ = ["Backoff"]


class Backoff:
    """The delay before a slot's next fetch.

    After ``n`` failures in a row: ``base * 2 ** (n - 1)`` seconds, at most
    ``cap`` and at most the slot's interval (a resource refreshed every 5 s
    is not retried less often than that). Otherwise the interval, spread by
    ``± jitter`` of itself so that resources loaded together do not refresh
    together; with ``early_only`` by ``- jitter`` only, so that fetches are at
    most the interval apart (a fleet producer's promise: a change is read within
    its resource's interval). None: never (interval -1, no failure).
    """

    def __init__(self, base: float, cap: float, jitter: float, *, early_only: bool = False) -> None:
        self.base = base
        self.cap = cap
        self.jitter = jitter
        self.early_only = early_only
        self._rng = random.Random()

    def delay(self, slot: Slot) -> float | None:
        """Seconds until ``slot``'s next fetch, or None when it is never refreshed."""
        if slot.consecutive_failures:
            # The exponent is capped: 2.0 ** 1024 overflows after ~1,000 failures in a row.
            backoff = self.base * 2.0 ** min(slot.consecutive_failures - 1, 60)
            delay = min(self.cap, backoff)
            return delay if slot.interval < 0 else min(delay, slot.interval)
        if slot.interval < 0:
            return None
        spread = slot.interval * self.jitter
        return slot.interval + self._rng.uniform(-spread, 0.0 if self.early_only else spread)
