"""The read-only face operators see: ``ResourceProvider`` and context plumbing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .._context import Context
from .._errors import PineappleError
from ._refvalue import ResourceHandle

__all__ = [
    "ResourceProvider",
    "ResourceUnavailableError",
    "Static",
    "StaticHandle",
    "borrow",
    "from_context",
    "with_resources",
]


@runtime_checkable
class ResourceProvider(Protocol):
    """Anything that lends resources by name. ``Manager`` and ``Static`` are two."""

    def get(self, name: str) -> ResourceHandle | StaticHandle | None:
        """A handle to release exactly once, or None when the resource is not available."""
        ...


class StaticHandle:
    """A handle over a plain value; release is a no-op (values are never closed)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def release(self) -> None:
        """Nothing to return: static values are not reference counted."""

    def __enter__(self) -> Any:
        return self.value

    def __exit__(self, *exc: object) -> None:
        return None


class Static:
    """A fixed name -> value provider, for tests and for operators run by hand.

    >>> provider = Static({"features": {"a": 1}})
    >>> with provider.get("features") as table:
    ...     table["a"]
    1
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def get(self, name: str) -> StaticHandle | None:
        """A no-op handle over the value, or None for an unknown name."""
        if name not in self._values:
            return None
        return StaticHandle(self._values[name])

    def names(self) -> list[str]:
        """The names this provider serves, sorted."""
        return sorted(self._values)


class _ResourcesKey:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<resources>"


_KEY = _ResourcesKey()


def with_resources(ctx: Context | None, provider: ResourceProvider) -> Context:
    """A new context that carries ``provider`` for operators to borrow from."""
    return (ctx if ctx is not None else Context()).with_value(_KEY, provider)


def from_context(ctx: Context | None) -> ResourceProvider | None:
    """The provider injected with :func:`with_resources`, or None."""
    if ctx is None:
        return None
    provider: ResourceProvider | None = ctx.value(_KEY)
    return provider


class ResourceUnavailableError(PineappleError, LookupError):
    """An operator asked for a resource its context cannot lend: there is no
    provider in the context, or the provider has no value of that name."""

    def __init__(self, operator: str, name: str | None) -> None:
        self.operator = operator
        self.resource = name
        if name is None:
            super().__init__(f"{operator}: no resource provider in context")
        else:
            super().__init__(f'{operator}: resource "{name}" not found')


def borrow(ctx: Context | None, name: str, operator: str) -> ResourceHandle | StaticHandle:
    """A handle on resource ``name`` for ``operator``; use it as ``with handle as value``.

    Raises :class:`ResourceUnavailableError` (naming the operator and the
    resource) when the context has no provider or the provider lacks ``name``.
    """
    provider = from_context(ctx)
    if provider is None:
        raise ResourceUnavailableError(operator, None)
    handle = provider.get(name)
    if handle is None:
        raise ResourceUnavailableError(operator, name)
    return handle
