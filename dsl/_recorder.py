"""What an operator call records, and the base class the generated methods build on.

``dsl.generated.operators.OperatorMethods`` (written by ``python -m codegen``)
subclasses :class:`OperatorRecorder`; each generated method forwards its typed
params and the metadata keywords to :meth:`OperatorRecorder._add_operator`,
which ``Flow`` and ``SubFlow`` implement.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from ._branch import SkipField
from ._errors import ValidationError

__all__ = ["METADATA_KEYWORDS", "OperatorCall", "OperatorRecorder"]

METADATA_KEYWORDS: tuple[str, ...] = (
    "name",
    "sources",
    "common_input",
    "common_output",
    "item_input",
    "item_output",
    "common_defaults",
    "item_defaults",
)
"""Keywords every operator method takes besides the operator's own params."""


@dataclass
class OperatorCall:
    """One recorded operator call (params without ``None`` values).

    ``skip`` holds its guards: ``skip_when`` fields and the control fields of
    the branches it is declared in (named at compile, see ``BranchField``).
    """

    type_name: str
    params: dict[str, Any]
    name: str | None = None
    sources: list[str] | None = None
    common_input: list[str] = field(default_factory=list)
    common_output: list[str] = field(default_factory=list)
    item_input: list[str] = field(default_factory=list)
    item_output: list[str] = field(default_factory=list)
    common_defaults: dict[str, Any] | None = None
    item_defaults: dict[str, Any] | None = None
    skip: list[SkipField] = field(default_factory=list)


def _fields(what: str, key: str, value: Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{what}: {key} must be a list of field names")
    return list(value)


def make_call(
    type_name: str,
    params: Mapping[str, Any],
    *,
    name: str | None,
    sources: Sequence[str] | None,
    common_input: Sequence[str] | None,
    common_output: Sequence[str] | None,
    item_input: Sequence[str] | None,
    item_output: Sequence[str] | None,
    common_defaults: Mapping[str, Any] | None,
    item_defaults: Mapping[str, Any] | None,
) -> OperatorCall:
    """An :class:`OperatorCall` from the keywords of an operator method (checked shapes)."""
    what = f"operator {name or type_name!r}"
    if name is not None and (not isinstance(name, str) or not name):
        raise ValidationError(f"{what}: name must be a non-empty string")
    return OperatorCall(
        type_name=type_name,
        params={k: v for k, v in params.items() if v is not None},
        name=name,
        sources=None if sources is None else _fields(what, "sources", sources),
        common_input=_fields(what, "common_input", common_input),
        common_output=_fields(what, "common_output", common_output),
        item_input=_fields(what, "item_input", item_input),
        item_output=_fields(what, "item_output", item_output),
        common_defaults=None if common_defaults is None else dict(common_defaults),
        item_defaults=None if item_defaults is None else dict(item_defaults),
    )


class OperatorRecorder(abc.ABC):
    """Records operator calls; the base of the generated ``OperatorMethods``."""

    @abc.abstractmethod
    def _add_operator(
        self,
        type_name: str,
        params: Mapping[str, Any],
        *,
        name: str | None = None,
        sources: Sequence[str] | None = None,
        common_input: Sequence[str] | None = None,
        common_output: Sequence[str] | None = None,
        item_input: Sequence[str] | None = None,
        item_output: Sequence[str] | None = None,
        common_defaults: Mapping[str, Any] | None = None,
        item_defaults: Mapping[str, Any] | None = None,
    ) -> Self:
        """Record one call of operator type ``type_name``; returns ``self`` for chaining."""
