"""Running one built-in operator by hand, and a provider that counts borrows."""

from __future__ import annotations

from typing import Any

import pineapple.operators  # noqa: F401  (registers the built-ins)
from pineapple import Context, resource
from pineapple.engine import OperatorInput, OperatorOutput, build_operator


def run(
    type_name: str,
    params: dict[str, Any] | None = None,
    meta: dict[str, list[str]] | None = None,
    common: dict[str, Any] | None = None,
    items: list[Any] | None = None,
    *,
    ctx: Context | None = None,
    templated: dict[str, Any] | None = None,
) -> OperatorOutput:
    """Build ``type_name`` and execute it once; returns its output."""
    op, _ = build_operator(type_name, params or {}, meta or {})
    out = OperatorOutput()
    try:
        op.execute(
            ctx or Context(), OperatorInput(common or {}, items or [], templated=templated), out
        )
    finally:
        op.close()
    return out


class _Handle:
    def __init__(self, owner: CountingProvider, value: Any) -> None:
        self.owner, self.value = owner, value

    def release(self) -> None:
        self.owner.released += 1

    def __enter__(self) -> Any:
        return self.value

    def __exit__(self, *exc: object) -> None:
        self.release()


class CountingProvider:
    """A provider whose handles count their releases (each borrow must be released once)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.borrowed = 0
        self.released = 0

    def get(self, name: str) -> Any:
        if name not in self.values:
            return None
        self.borrowed += 1
        return _Handle(self, self.values[name])

    def context(self) -> Context:
        return resource.with_resources(Context(), self)
