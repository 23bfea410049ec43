"""Why the Manager refused a value or an admin action: one class per kind.

A refused *value* (:class:`ValueRefusedError`) was fetched completely but never
swapped in: a validator found it bad (:class:`ValidationRefusedError`) or it
would not fit in the memory budget (:class:`MemoryBudgetExceededError`). The
previous value keeps serving and the refused one is closed. A refused
*action* is a refresh of a pinned resource (:class:`PinnedError`) or a
rollback without a kept previous value (:class:`NoPreviousValueError`).
"""

from __future__ import annotations

from .._errors import PineappleError

__all__ = [
    "MemoryBudgetExceededError",
    "NoPreviousValueError",
    "PinnedError",
    "ValidationRefusedError",
    "ValueRefusedError",
]


class ValueRefusedError(PineappleError):
    """A new value of ``resource`` was refused before the swap; the old one keeps serving.

    ``check`` names what refused it (``min_rows``, a hook's name,
    ``memory_budget``...); ``reason`` says why, without the resource's name.
    """

    def __init__(self, resource: str, check: str, reason: str, *, serving: bool = True) -> None:
        kept = "the previous value keeps serving" if serving else "no value is loaded yet"
        super().__init__(f"resource {resource!r}: new value refused by {check}: {reason} ({kept})")
        self.resource = resource
        self.check = check
        self.reason = reason
        self.serving = serving
        """False when no value was loaded (a first load refused): nothing keeps serving."""


class ValidationRefusedError(ValueRefusedError):
    """A validator (built-in check or registered hook) refused the new value."""


class MemoryBudgetExceededError(ValueRefusedError):
    """The new value would push the manager's memory in use over its budget."""


class PinnedError(PineappleError):
    """The resource is pinned: it is not refreshed until it is unpinned."""

    def __init__(self, resource: str, reason: str) -> None:
        super().__init__(
            f"resource {resource!r} is pinned ({reason}); unpin it first "
            f"(POST /admin/resources/{resource}/unpin)"
        )
        self.resource = resource
        self.reason = reason


class NoPreviousValueError(PineappleError):
    """A rollback was asked for but no previous value is kept for the resource."""
