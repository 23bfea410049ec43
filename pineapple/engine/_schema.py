"""Operator types: ``OperatorSchema`` + factory, registered by name.

Symmetric with resource types (``pineapple.resource.ResourceSchema``): both
registries are read by codegen to write the typed DSL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import RegistryError
from .._params import ParamSpec
from .._registry import SchemaRegistry

__all__ = [
    "OPERATOR_KINDS",
    "OperatorFactory",
    "OperatorKind",
    "OperatorRegistry",
    "OperatorSchema",
    "all_operator_schemas",
    "default_operator_registry",
    "register_operator",
]

OperatorKind = Literal["recall", "transform", "filter", "merge", "reorder", "observe"]
OPERATOR_KINDS: tuple[str, ...] = ("recall", "transform", "filter", "merge", "reorder", "observe")
ENTRY_POINT_GROUP = "pineapple.operators"

OperatorFactory = Callable[[dict[str, Any]], Any]
"""Builds an operator instance from its validated params."""


@dataclass(frozen=True)
class OperatorSchema:
    """An operator type: name, kind, one-line description, params.

    ``blocking``: the operator does network or disk I/O while executing (e.g.
    Redis calls), so a server must not run it on its event loop.
    """

    name: str
    kind: OperatorKind
    description: str
    params: Mapping[str, ParamSpec] = field(default_factory=dict)
    blocking: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            raise RegistryError("OperatorSchema.name is required")
        if self.kind not in OPERATOR_KINDS:
            raise RegistryError(
                f"operator {self.name!r}: kind must be one of {OPERATOR_KINDS}, got {self.kind!r}"
            )
        if not self.description:
            raise RegistryError(f"operator {self.name!r}: description is required")


class OperatorRegistry(SchemaRegistry[OperatorSchema, OperatorFactory]):
    """A set of operator types (``OperatorRegistry()`` for an isolated one in tests)."""

    kind = "operator type"


_DEFAULT = OperatorRegistry(plugin_group=ENTRY_POINT_GROUP)


def default_operator_registry() -> OperatorRegistry:
    """The process-wide registry that :func:`register_operator` writes to."""
    return _DEFAULT


def register_operator(schema: OperatorSchema, factory: OperatorFactory) -> None:
    """Register an operator type in the default registry (call at import time)."""
    _DEFAULT.register(schema, factory)


def all_operator_schemas() -> list[OperatorSchema]:
    """Every operator type of the default registry, sorted by name."""
    return _DEFAULT.all()
