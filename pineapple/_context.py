"""The immutable request context that carries resources into operators."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[object, Any] | None = None) -> None:
        self._values: Mapping[object, Any] = dict(values) if values else _EMPTY

    def value(self, key: object, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        return self._values.get(key, default)

    def with_value(self, key: object, value: Any) -> Context:
        """A new context equal to this one plus ``key -> value``."""
        new = Context.__new__(Context)
        values = dict(self._values)
        values[key] = value
        new._values = values
        return new

    def __repr__(self) -> str:
        return f"Context({len(self._values)} values)"
