"""How one ``ParamSpec`` appears in generated code: keyword, annotation, default, doc line."""

from __future__ import annotations

import keyword
import math
from dataclasses import dataclass
from typing import Any

from pineapple import ParamSpec

from ._errors import CodegenError
from ._source import Group, Node, literal

__all__ = ["Param", "param_of", "spec_node"]

_ANNOTATIONS = {
    "string": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "list": "list[Any]",
    "dict": "dict[str, Any]",
    "any": "Any",
}


@dataclass(frozen=True)
class Param:
    """One parameter of a generated signature.

    ``key``: the params key; ``arg``: the Python keyword (``key`` itself, or
    ``key_`` when ``key`` is a Python keyword or a name the DSL already uses).
    """

    key: str
    arg: str
    annotation: str
    default: str | None  # None: required (no default)
    doc: str

    @property
    def signature(self) -> str:
        """The parameter as written in a ``def``."""
        if self.default is None:
            return f"{self.arg}: {self.annotation}"
        return f"{self.arg}: {self.annotation} = {self.default}"

    @property
    def uses_any(self) -> bool:
        """The annotation mentions ``Any``."""
        return "Any" in self.annotation


def _scalar_default(spec: ParamSpec) -> str | None:
    """The default as a literal when it is a scalar fit for the signature, else None."""
    value = spec.default
    if isinstance(value, bool | str):
        return str(literal(value))
    if isinstance(value, int | float) and math.isfinite(value):
        return str(literal(value))
    return None


def _doc(key: str, spec: ParamSpec) -> str:
    text = " ".join(spec.description.split())
    notes: list[str] = [spec.type]
    if spec.required:
        notes.append("required")
    elif spec.default is not None:
        notes.append(f"default {_short(spec.default)}")
    if spec.choices:
        notes.append(f"one of {', '.join(_short(c) for c in spec.choices)}")
    if spec.minimum is not None:
        notes.append(f">= {spec.minimum:g}")
    if spec.maximum is not None:
        notes.append(f"<= {spec.maximum:g}")
    if spec.templatable:
        notes.append("may be a {{field}} template")
    return f"{text} ({', '.join(notes)})".lstrip()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def param_of(
    owner: str, key: str, spec: ParamSpec, reserved: frozenset[str], *, unset: str = "None"
) -> Param:
    """The signature parameter for ``key`` of ``owner`` (an operator or resource type).

    ``unset``: the default of an optional param without a scalar default
    (operators use ``UNSET``, so that an explicit ``None`` means JSON ``null``).
    """
    if not key.isidentifier():
        raise CodegenError(f"{owner}: parameter {key!r} is not a Python identifier")
    arg = key
    if keyword.iskeyword(key) or key in reserved:
        arg = key + "_"
    annotation = _ANNOTATIONS[spec.type]
    if spec.templatable and spec.type not in ("string", "any"):
        annotation += " | str"
    if spec.required:
        default = None
    else:
        default = _scalar_default(spec)
        if default is None:
            default = unset
            if spec.type != "any":
                annotation += " | None"
    return Param(key=key, arg=arg, annotation=annotation, default=default, doc=_doc(key, spec))


def spec_node(spec: ParamSpec) -> Node:
    """``ParamSpec(...)`` for a ``_params_schema`` entry (description left to the docstring)."""
    items: list[tuple[str, Node]] = [("type=", literal(spec.type))]
    if spec.required:
        items.append(("required=", "True"))
    if spec.default is not None:
        items.append(("default=", literal(spec.default)))
    if spec.templatable:
        items.append(("templatable=", "True"))
    if spec.choices:
        items.append(("choices=", literal(spec.choices)))
    for bound in ("minimum", "maximum"):
        value = getattr(spec, bound)
        if value is not None:
            items.append((f"{bound}=", literal(value)))
    return Group("ParamSpec(", items, ")")
