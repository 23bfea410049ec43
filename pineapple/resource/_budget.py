"""The memory budget: sizes of resource values and the values still alive.

A Manager counts, per resource, the size of its current value and of its
kept previous value (``keep_previous``). A value retired by a swap, a
rollback or a dropped previous is still in memory while a reader borrows it:
:meth:`MemoryBudget.retire` records its size in the budget's ledger and the
closer hook :func:`forget_retired` removes it when its last borrower releases
(``RefValue`` hands every value whose count reaches 0 to
``_closer.schedule_close``, which calls the hook first). So the ledger holds
exactly the retired values that are still borrowed, and only their sizes and
ids (never the values: it keeps nothing alive).

Sizes come from the resource type's printer: ``printer.size_of(value)`` gives
bytes (or None: unknown, counted as 0 and shown as null).

Guarantees:
- ``_lock`` (one per process) guards every ledger: ``retire`` records the
  entry *before* dropping the baseline reference, so a last release that
  follows at once finds the entry to remove; an entry is removed at most once
  per retirement (entries of one object id are a list, one popped per
  release; an id cannot be reused while its object is alive, and it is alive
  until its last release).
- ``retired_bytes`` read under ``_lock`` is the exact sum of the retired
  values not yet released at that moment.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from ._closer import add_release_hook
from ._hooks import hook_of

if TYPE_CHECKING:  # annotations only
    from ._refvalue import RefValue

__all__ = ["MemoryBudget", "forget_retired", "size_of"]

_log = logging.getLogger("pineapple.resource")

_lock = threading.Lock()
_ledger: dict[int, list[tuple[MemoryBudget, int]]] = {}


def size_of(printer: Any, label: str, value: Any) -> int | None:
    """``printer.size_of(value)`` in bytes, or None (no hook, or it failed: logged)."""
    hook = hook_of(printer, "size_of")
    if hook is None:
        return None
    try:
        size = hook(value)
    except Exception as exc:
        _log.warning("%s: size_of failed: %s: %s", label, type(exc).__name__, exc)
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        return None
    return size


class MemoryBudget:
    """A limit on the bytes of resource values (None: no limit) and its ledger.

    One budget may be shared by successive managers (the server passes the
    same one to every snapshot), so values retired by a manager that was
    replaced still count while they are borrowed.
    """

    def __init__(self, limit_bytes: int | None = None) -> None:
        if limit_bytes is not None and limit_bytes <= 0:
            raise ValueError(f"memory budget must be > 0 bytes, got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self._retired = 0
        self._retired_count = 0

    def retire(self, ref: RefValue, size: int | None) -> None:
        """Drop ``ref``'s baseline reference, counting ``size`` until its last release."""
        if size:
            with _lock:
                _ledger.setdefault(id(ref.value), []).append((self, size))
                self._retired += size
                self._retired_count += 1
        ref.release()

    @property
    def retired_bytes(self) -> int:
        """Bytes of retired values that readers still borrow."""
        with _lock:
            return self._retired

    @property
    def retired_count(self) -> int:
        """How many retired values readers still borrow (those of known size)."""
        with _lock:
            return self._retired_count

    def _forget(self, size: int) -> None:  # caller holds _lock
        self._retired -= size
        self._retired_count -= 1

    def __repr__(self) -> str:
        return f"MemoryBudget(limit={self.limit_bytes}, retired={self._retired})"


def forget_retired(value: Any) -> None:
    """The last reference to ``value`` is gone: it no longer counts (closer hook)."""
    with _lock:
        entries = _ledger.get(id(value))
        if not entries:
            return
        budget, size = entries.pop(0)
        if not entries:
            del _ledger[id(value)]
        budget._forget(size)


add_release_hook(forget_retired)
