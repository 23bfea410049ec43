"""What an operator call records, and the base class the generated methods build on.

``dsl.generated.operators.OperatorMethods`` (written by ``python -m codegen``)
subclasses :class:`OperatorRecorder`; each generated method builds an
:class:`OperatorCall` from its typed params and the metadata keywords
(:func:`make_call`) and hands it to :meth:`OperatorRecorder._record`, which
``Flow`` and ``SubFlow`` implement.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypedDict, Unpack

from ._branch import SkipField
from ._code_info import caller_location
from ._errors import ValidationError

__all__ = [
    "MARKERS",
    "METADATA_KEYWORDS",
    "UNSET",
    "CallKeywords",
    "OperatorCall",
    "OperatorRecorder",
    "field_list",
    "make_call",
]

METADATA_KEYWORDS: tuple[str, ...] = (
    "name",
    "sources",
    "common_input",
    "common_output",
    "item_input",
    "item_output",
    "common_defaults",
    "item_defaults",
    "strict_common",
    "strict_item",
    "data_parallel",
    "debug",
    "recall",
    "consumes_row_set",
    "additive_writes_row_set",
    "mutates_row_set",
)
"""Keywords every operator method takes besides the operator's own params."""

MARKERS: tuple[str, ...] = ("consumes_row_set", "additive_writes_row_set", "mutates_row_set")
"""Row-set markers a call may widen (Apple's keywords; an operator type declares its own).

``True`` adds the marker to the operator (the engine ORs it with the type's
markers, as the public engines do); ``False`` or ``None`` leaves the type's
markers as they are: a call can widen a marker, never narrow it.
"""


class _Unset:
    """The default of an optional param that was not given (``None`` is an explicit null)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of generated optional params: "not given", left out of the config.

Typed ``Any`` so it fits any annotation; a param passed as ``None`` instead
is written as JSON ``null`` (checked against the schema at compile).
"""


@dataclass
class OperatorCall:
    """One recorded operator call (params that were given; ``None`` is an explicit null).

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
    strict_common: list[str] = field(default_factory=list)
    strict_item: list[str] = field(default_factory=list)
    data_parallel: int = 0
    debug: bool = False
    skip: list[SkipField] = field(default_factory=list)
    markers: tuple[str, ...] = ()
    """Row-set markers the call widened (written ``true`` in the config)."""
    code_info: str = ""
    """Where the call was written (``$code_info``): ``file.py:12 in build(): .x(...)``."""


class CallKeywords(TypedDict, total=False):
    """The keywords every operator method takes besides the operator's own params."""

    name: str | None
    sources: Sequence[str] | None
    common_input: Sequence[str] | None
    common_output: Sequence[str] | None
    item_input: Sequence[str] | None
    item_output: Sequence[str] | None
    common_defaults: Mapping[str, Any] | None
    item_defaults: Mapping[str, Any] | None
    strict_common: Sequence[str] | None
    strict_item: Sequence[str] | None
    data_parallel: int | None
    debug: bool | None
    recall: bool | None
    consumes_row_set: bool | None
    additive_writes_row_set: bool | None
    mutates_row_set: bool | None


def field_list(what: str, key: str, value: Sequence[str] | None) -> list[str]:
    """``value`` as a list of field names (``None``: empty); a str or non-str item is refused."""
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{what}: {key} must be a list of field names")
    return list(value)


def make_call(
    type_name: str, params: Mapping[str, Any], **keywords: Unpack[CallKeywords]
) -> OperatorCall:
    """An :class:`OperatorCall` from the keywords of an operator method (checked shapes).

    As in Apple, ``name=""`` means auto-named, ``recall`` is accepted and
    ignored (the engine knows which types recall), and a row-set marker given
    ``True`` widens the operator's markers. ``$code_info`` records the first
    caller outside the DSL (the line of the user's flow file).
    """
    unknown = sorted(set(keywords) - set(METADATA_KEYWORDS))
    name = keywords.get("name") or None
    what = f"operator {name or type_name!r}"
    if unknown:
        raise ValidationError(f"{what}: unknown keyword(s) {unknown}")
    if name is not None and not isinstance(name, str):
        raise ValidationError(f"{what}: name must be a string, got {name!r}")
    flags = {key: keywords.get(key) for key in ("recall", *MARKERS)}
    for key, flag in flags.items():
        if flag is not None and not isinstance(flag, bool):
            raise ValidationError(f"{what}: {key} must be a bool, got {flag!r}")
    sources = keywords.get("sources")
    common_defaults = keywords.get("common_defaults")
    item_defaults = keywords.get("item_defaults")
    data_parallel = keywords.get("data_parallel")
    if data_parallel is None:
        data_parallel = 0
    if isinstance(data_parallel, bool) or not isinstance(data_parallel, int) or data_parallel < 0:
        raise ValidationError(f"{what}: data_parallel must be an int >= 0, got {data_parallel!r}")
    debug = keywords.get("debug")
    if debug is not None and not isinstance(debug, bool):
        raise ValidationError(f"{what}: debug must be a bool, got {debug!r}")
    return OperatorCall(
        type_name=type_name,
        params={k: v for k, v in params.items() if v is not UNSET},
        name=name,
        sources=None if sources is None else field_list(what, "sources", sources),
        common_input=field_list(what, "common_input", keywords.get("common_input")),
        common_output=field_list(what, "common_output", keywords.get("common_output")),
        item_input=field_list(what, "item_input", keywords.get("item_input")),
        item_output=field_list(what, "item_output", keywords.get("item_output")),
        common_defaults=None if common_defaults is None else dict(common_defaults),
        item_defaults=None if item_defaults is None else dict(item_defaults),
        strict_common=field_list(what, "strict_common", keywords.get("strict_common")),
        strict_item=field_list(what, "strict_item", keywords.get("strict_item")),
        data_parallel=data_parallel,
        debug=bool(debug),
        markers=tuple(key for key in MARKERS if flags[key]),
        code_info=caller_location(type_name),
    )


class OperatorRecorder(abc.ABC):
    """Records operator calls; the base of the generated ``OperatorMethods``."""

    @abc.abstractmethod
    def _record(self, call: OperatorCall) -> Self:
        """Record one operator call (built by :func:`make_call`); returns ``self``."""
