"""The immutable request context that carries resources into operators."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ._errors import DeadlineExceededError

__all__ = ["Context"]

_EMPTY: Mapping[object, Any] = {}


class Context:
    """An immutable bag of request-scoped values (like Go's ``context.Context``).

    ``with_value`` returns a new context; the original is never changed, so a
    context may be shared between threads freely.

    >>> ctx = Context().with_value("trace_id", "abc")
    >>> ctx.value("trace_id")
    'abc'
    """

    __slots__ = ("_values", "deadline")

    def __init__(
        self, values: Mapping[object, Any] | None = None, *, deadline: float | None = None
    ) -> None:
        self._values: Mapping[object, Any] = dict(values) if values else _EMPTY
        #: Monotonic time (``time.monotonic()``) after which the request must
        #: stop, or None for no deadline.
        self.deadline: float | None = deadline

    def with_deadline(self, deadline: float | None) -> Context:
        """A new context with the same values and ``deadline`` (monotonic seconds)."""
        new = Context.__new__(Context)
        new._values = self._values
        new.deadline = deadline
        return new

    def with_timeout(self, seconds: float) -> Context:
        """A new context whose deadline is ``seconds`` from now (never later than this one's)."""
        deadline = time.monotonic() + seconds
        if self.deadline is not None and self.deadline < deadline:
            deadline = self.deadline
        return self.with_deadline(deadline)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (0.0 once passed), or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        """True once the deadline has passed (never without a deadline)."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check_deadline(self, operator: str | None = None) -> None:
        """Raise :class:`DeadlineExceededError` naming ``operator`` once the deadline passed."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            where = f' in operator "{operator}"' if operator else ""
            raise DeadlineExceededError(f"deadline exceeded{where}", operator=operator)

    def value(self, key: object, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        return self._values.get(key, default)

    def with_value(self, key: object, value: Any) -> Context:
        """A new context equal to this one plus ``key -> value``."""
        new = Context.__new__(Context)
        values = dict(self._values)
        values[key] = value
        new._values = values
        new.deadline = self.deadline
        return new

    def __repr__(self) -> str:
        return f"Context({len(self._values)} values)"
