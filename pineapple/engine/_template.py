"""``{{field}}`` templated operator params: planned at build time, resolved per request.

A param declared ``templatable`` may hold exactly one bare marker, e.g.
``"top_n": "{{page_size}}"``. The engine reads the named common field before
the operator runs, formats it as Go's ``fmt.Sprint`` would and parses it as
the param's declared scalar type; the operator finds the value in
``inp.templated[param]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .._params import TEMPLATE_MARKER
from ._config import config_error
from ._gofmt import format_value
from ._schema import OperatorSchema

__all__ = ["TemplatedParam", "is_template", "plan_templates", "resolve_templates"]

_BARE = re.compile(r"^\{\{(\w+)\}\}$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_SCALARS = {"string": "string", "int": "int64", "float": "float64", "bool": "bool"}
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

TemplatedParam = tuple[str, str, str]
"""``(param, scalar type, common field)``."""


def is_template(value: Any) -> bool:
    """True when ``value`` is a bare ``{{field}}`` marker (an operator accepts it as a stand-in)."""
    return isinstance(value, str) and _BARE.match(value) is not None


def plan_templates(
    op_name: str, schema: OperatorSchema, params: Mapping[str, Any]
) -> tuple[TemplatedParam, ...]:
    """The per-request resolution plan of an operator's templated params."""
    plan: list[TemplatedParam] = []
    for pname in sorted(params):
        raw = params[pname]
        if not isinstance(raw, str) or not TEMPLATE_MARKER.search(raw):
            continue
        spec = schema.params.get(pname)
        if spec is None:
            raise config_error(f'operator "{op_name}": param "{pname}" is not declared in schema')
        if not spec.templatable:
            raise config_error(
                f'operator "{op_name}": param "{pname}" is not declared templatable in schema'
            )
        scalar = _SCALARS.get(spec.type)
        if scalar is None:
            raise config_error(
                f'operator "{op_name}": param "{pname}" has declared type "{spec.type}" '
                "which does not support templating"
            )
        bare = _BARE.match(raw)
        if bare is None:
            raise config_error(
                f'operator "{op_name}": param "{pname}" value "{raw}" must be a bare '
                "{{field}} marker"
            )
        plan.append((pname, scalar, bare.group(1)))
    return tuple(plan)


def resolve_templates(
    plan: tuple[TemplatedParam, ...], common: Mapping[str, Any]
) -> dict[str, Any]:
    """Resolve ``plan`` against the request's common fields. Raises ``ValueError``."""
    out: dict[str, Any] = {}
    for pname, scalar, fieldname in plan:
        value = common.get(fieldname)
        if value is None:
            raise ValueError(
                f'templated param "{pname}" references common field "{fieldname}" which is missing'
            )
        out[pname] = _coerce(pname, scalar, format_value(value))
    return out


def _coerce(pname: str, scalar: str, text: str) -> Any:
    if scalar == "string":
        return text
    if scalar == "int64" and _INT.match(text):
        n = int(text)
        if -(2**63) <= n < 2**63:
            return n
    elif scalar == "float64":
        if _FLOAT.match(text):
            f = float(text)
            if not math.isinf(f):
                return f
        elif text.lower() in ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan"):
            return float(text)
    elif scalar == "bool":
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError(f'templated param "{pname}" cannot coerce "{text}" to {scalar}')
