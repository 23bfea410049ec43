"""What a fetch can end in, who hears of it, and the errors of asking for one.

A fetcher returns a new value, or :data:`NOT_MODIFIED` to keep the current
one; each attempt ends in a :data:`RefreshResult`, reported to the
Manager's :class:`ManagerMetrics` (the server plugs Prometheus in there).
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

from .._errors import PineappleError

__all__ = [
    "NOT_MODIFIED",
    "ManagerMetrics",
    "RefreshError",
    "RefreshResult",
    "UnknownResourceError",
]

RefreshResult = Literal["swapped", "not_modified", "error", "refused"]


class _NotModified:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_MODIFIED"


NOT_MODIFIED: Final = _NotModified()
"""Returned by a fetcher to keep the current value without a swap."""


class UnknownResourceError(PineappleError, LookupError):
    """No resource of that name is registered."""


class RefreshError(PineappleError):
    """A synchronous ``refresh(name)`` failed; the previous value is kept."""


class ManagerMetrics(Protocol):
    """What a Manager reports; the server plugs Prometheus in here."""

    def observe_refresh(
        self, name: str, type_name: str, result: RefreshResult, seconds: float
    ) -> None:
        """One fetch attempt of ``name`` ended with ``result`` after ``seconds``."""
        ...


# A ManagerMetrics may also define ``observe_refusal(name, type_name, check)``:
# a new value of ``name`` was refused by ``check`` (a validator's name or
# ``memory_budget``). Optional, so existing metrics objects keep working.
