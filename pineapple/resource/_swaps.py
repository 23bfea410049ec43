"""The swap table: every change of what a Manager's slots serve, and its memory budget.

Guarantees:
- ``lock`` (one per manager) is held for every change of a slot's current or
  previous value and of their sizes: a swap, a rollback, a pin or unpin, the
  unpublishing at stop. A slot's own ``lock`` is taken inside it, never the
  other way round.
- Under ``lock`` a new value passes the pin check (a pin that landed during
  the fetch wins), then the budget check against the sizes of every slot's
  current and previous values plus the retired values still borrowed, and
  only then is it published. So two resources refreshing at once cannot both
  fit a budget that only fits one, and a refused value is never seen by a
  reader.
- A fetcher's ``commit(value)`` runs under ``lock``, after every check passed
  and just before the value is served (or served again by a rollback); if it
  raises, nothing is swapped. So nothing is published that is not served.
- A retired value's baseline reference is dropped through the budget
  (``MemoryBudget.retire``) outside ``lock``: the ledger counts it until its
  last borrower releases.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ._budget import MemoryBudget
from ._hooks import hook_of
from ._outcome import RefreshError
from ._refusal import MemoryBudgetExceededError, NoPreviousValueError, PinnedError
from ._refvalue import RefValue
from ._slot import Slot

__all__ = ["SwapTable", "utc"]


def utc(when: float) -> str:
    """``when`` (Unix time) as an ISO 8601 UTC second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


class SwapTable:
    """The slots of one Manager as far as swapping goes; see "Guarantees:".

    ``observe(slot, now)`` dates the conditions a change flipped (called with
    the slot's lock held); ``stopped()`` tells whether the manager stopped.
    """

    def __init__(
        self,
        slots: Mapping[str, Slot],
        budget: MemoryBudget,
        observe: Callable[[Slot, float], None],
        stopped: Callable[[], bool],
    ) -> None:
        self.lock = threading.Lock()
        self.budget = budget
        self._slots = slots
        self._observe = observe
        self._stopped = stopped

    def publish(
        self,
        slot: Slot,
        ref: RefValue,
        size: int | None,
        now: float,
        *,
        upstream: bool,
        forced: str | None,
        pin: str | None = None,
    ) -> int | None:
        """Serve ``ref`` (of ``size`` bytes) in ``slot``; the new version, or None when the
        manager stopped meanwhile (``ref`` is then retired unserved). ``forced``: the
        validators' refusal an admin overrode, shown in the slot's status. ``pin``: serve
        it pinned with this reason, whatever pin the slot had (a value restored by
        ``Manager.restore``); None: a fetched value, refused while the slot is pinned.

        Raises :class:`PinnedError` (pinned during the fetch, unless ``pin``), or
        :class:`MemoryBudgetExceededError` unless ``upstream`` (another process
        fitted the value in its budget), or what the fetcher's ``commit``
        raised; nothing is swapped then and ``ref`` is dropped unreleased (its
        value was never published: the caller hands it to the closer once).
        """
        commit = hook_of(slot.fetcher, "commit")
        version: int | None = None
        with self.lock:
            if slot.pinned is not None and pin is None:
                raise PinnedError(slot.name, slot.pinned)
            if not upstream:
                self._check_budget(slot, size)
            with slot.lock:
                if self._stopped():  # too late to publish: drop the new value
                    retire: tuple[RefValue, int | None] | None = (ref, None)
                else:
                    if commit is not None:  # every check passed: the fetcher publishes it
                        commit(ref.value)
                    old_size = slot.current_size
                    old = slot.publish(ref, now)
                    slot.current_size = size
                    slot.refusal, slot.refused_error, slot.forced = None, None, forced
                    if pin is not None:
                        slot.pinned = pin
                    retire = slot.shelve(old, old_size)
                    self._observe(slot, now)
                    version = slot.version
        if retire is not None:
            self.budget.retire(*retire)
        return version

    def _check_budget(self, slot: Slot, size: int | None) -> None:
        """Refuse a value of ``size`` bytes for ``slot`` that would not fit (caller holds
        ``lock``): counts every other slot's current and previous values, the
        retired values still borrowed, and what this swap keeps of ``slot``'s own.
        """
        limit = self.budget.limit_bytes
        if limit is None:
            return
        total = self.budget.retired_bytes + (size or 0)
        for other in self._slots.values():
            if other is not slot:
                total += (other.current_size or 0) + (other.previous_size or 0)
        # After the swap this slot still holds: its old value as previous (keep_previous),
        # and whatever it drops that a reader still borrows (refs above the baseline).
        dropped, dropped_size = slot.current, slot.current_size
        if slot.keep_previous:
            total += slot.current_size or 0
            dropped, dropped_size = slot.previous, slot.previous_size
        if dropped is not None and dropped.refs > 1:
            total += dropped_size or 0
        if total > limit:
            raise MemoryBudgetExceededError(
                slot.name,
                "memory_budget",
                f"{size or 0} bytes would bring the resources' memory in use to {total} "
                f"bytes, over the budget of {limit} bytes",
            )

    def roll_back(self, slot: Slot, now: float) -> int:
        """Serve ``slot``'s kept previous value again and pin it; the new version.

        :class:`NoPreviousValueError` when none is kept; :class:`RefreshError`
        when the fetcher's ``commit`` of it failed (nothing swapped).
        """
        commit = hook_of(slot.fetcher, "commit")
        with self.lock:
            previous, previous_size = slot.previous, slot.previous_size
            if previous is None:
                why = "keep_previous is off" if not slot.keep_previous else "none kept yet"
                raise NoPreviousValueError(
                    f"resource {slot.name!r} has no previous value to roll back to ({why})"
                )
            if commit is not None:  # the fetcher publishes it again (outside the slot lock)
                try:
                    commit(previous.value)
                except Exception as exc:
                    reason = slot.said(f"{type(exc).__name__}: {exc}")
                    raise RefreshError(
                        f"rollback of resource {slot.name!r} failed: {reason}"
                    ) from None
            with slot.lock:
                slot.previous, slot.previous_size = None, None
                replaced_size = slot.current_size
                replaced = slot.publish(previous, now)
                slot.current_size = previous_size
                slot.pinned = f"rolled back to the previous value at {utc(now)}"
                self._observe(slot, now)
            if replaced is not None:
                self.budget.retire(replaced, replaced_size)
            return slot.version

    def pin(self, slot: Slot, why: str, now: float) -> str | None:
        """Pin ``slot`` with reason ``why`` unless pinned; returns the pin it already had."""
        with self.lock, slot.lock:
            already, slot.pinned = slot.pinned, slot.pinned or why
            self._observe(slot, now)
        return already

    def unpin(self, slot: Slot, now: float, only: str | None = None) -> str | None:
        """Unpin ``slot`` (with ``only``: if that is its pin); returns the pin it had (None:
        it was not pinned)."""
        with self.lock, slot.lock:
            was = slot.pinned
            if only is not None and was != only:
                return was
            slot.pinned = None
            self._observe(slot, now)
        return was

    def unpublish(self, slot: Slot, now: float) -> None:
        """Serve nothing from ``slot`` any more (stop): drop its current and previous values."""
        with self.lock, slot.lock:
            refs = (slot.unpublish(), slot.unpublish_previous())
            slot.observe(True, now)
        for ref in refs:
            if ref is not None:
                ref.release()

    def memory(self) -> dict[str, Any]:
        """The memory budget in use: limit, bytes of current, previous and retired-but-
        borrowed values, and which resources have no known size."""
        with self.lock:
            slots = list(self._slots.values())
            current = sum(s.current_size or 0 for s in slots)
            previous = sum(s.previous_size or 0 for s in slots)
            unknown = sorted(
                s.name for s in slots if s.current is not None and s.current_size is None
            )
        retired = self.budget.retired_bytes
        return {
            "budget_bytes": self.budget.limit_bytes,
            "in_use_bytes": current + previous + retired,
            "current_bytes": current,
            "previous_bytes": previous,
            "retired_borrowed_bytes": retired,
            "retired_borrowed_values": self.budget.retired_count,
            "unknown_size": unknown,
        }
