"""Typed parameter declarations shared by operator and resource schemas.

A :class:`ParamSpec` declares one parameter: its type and, optionally, the
values it may take (``choices``) or the range of a number (``minimum``,
``maximum``). :func:`param_problem` is the one check of a value against its
spec: the engine calls it for every operator param when it builds
(``pineapple check``, start, every reload), :func:`validate_params` for
resource params and the DSL at compile time. Types are strict (a string is
never turned into a number) with JSON's number rules: an integral value is a
valid ``float``, and ``5.0`` a valid ``int`` (Go decodes every JSON number
as a float64, so a Go config may write either).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._error_text import clipped
from ._errors import ConfigError
from ._suggest import did_you_mean

__all__ = [
    "PARAM_TYPES",
    "TEMPLATE_MARKER",
    "ParamSpec",
    "ParamType",
    "param_problem",
    "validate_params",
]

ParamType = Literal["string", "int", "float", "bool", "list", "dict", "any"]
PARAM_TYPES: tuple[str, ...] = ("string", "int", "float", "bool", "list", "dict", "any")

TEMPLATE_MARKER = re.compile(r"\{\{(\w+)\}\}")
"""A ``{{field}}`` marker: the param takes the request's common field per request."""

_SCALARS = frozenset({"string", "int", "float", "bool"})
_NUMBERS = frozenset({"int", "float"})
_EXPECTED = {
    "string": "a string",
    "int": "numeric (an integer)",
    "float": "numeric",
    "bool": "true or false",
    "list": "a list (JSON array)",
    "dict": "an object (JSON object)",
}
_ECHO_BYTES = 72
"""How much of a given string an error repeats: 40 bytes and the mark of the cut."""


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One declared parameter of an operator or resource type.

    ``type`` is one of ``string int float bool list dict any``. A parameter
    that is not ``required`` and absent takes ``default`` (``None``: left out).
    ``choices``: the only values the parameter may take (scalar types).
    ``minimum`` / ``maximum``: the inclusive range of an ``int`` or ``float``.
    ``templatable``: the value may be a ``{{field}}`` template resolved per
    request from common fields (operators only). ``path``: the value is a file
    path; a relative one is resolved against the config file's folder
    (resources only).
    """

    type: ParamType
    required: bool = False
    default: Any = None
    description: str = ""
    templatable: bool = False
    path: bool = False
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"ParamSpec type must be one of {PARAM_TYPES}, got {self.type!r}")
        object.__setattr__(self, "choices", tuple(self.choices))  # a list written is kept as one
        if self.choices and self.type not in _SCALARS:
            raise ValueError(f"ParamSpec choices need a scalar type, not {self.type!r}")
        for choice in self.choices:
            if _type_problem(self.type, choice):
                raise ValueError(f"ParamSpec choice {choice!r} is not of type {self.type!r}")
        bounded = self.minimum is not None or self.maximum is not None
        if bounded and self.type not in _NUMBERS:
            raise ValueError(f"ParamSpec minimum/maximum need int or float, not {self.type!r}")


def _given(value: Any, echo: bool) -> str:
    """What was given, for an error: its JSON type and, with ``echo``, a cut value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, str):
        if not echo:
            return "a string"
        return f'string "{clipped(value, _ECHO_BYTES)}"'
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _type_problem(type_name: str, value: Any) -> str | None:
    """Why ``value`` is not of ``type_name`` (the expectation), or None."""
    if type_name == "any":
        return None
    ok = False
    if type_name == "string":
        ok = isinstance(value, str)
    elif type_name in _NUMBERS:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and type_name == "int" and isinstance(value, float):
            ok = math.isfinite(value) and value.is_integer()
    elif type_name == "bool":
        ok = isinstance(value, bool)
    elif type_name == "list":
        ok = isinstance(value, list | tuple)  # a tuple: a DSL value, written as an array
    elif type_name == "dict":
        ok = isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return None if ok else _EXPECTED[type_name]


def param_problem(spec: ParamSpec, value: Any, *, echo: bool = False) -> str | None:
    """What is wrong with ``value`` for ``spec`` (``"must be numeric, got string "x""``), or None.

    ``echo`` repeats a given string (cut to 40 bytes); leave it off where
    a value may be a secret (resource params). A string holding a ``{{field}}``
    marker in a non-string param is left to the template checks (the engine's
    plan, the DSL's); ``null`` is accepted only by ``any``, ``list`` and
    ``dict`` params. Bounded: a constant amount of work per value (a
    ``dict``'s keys are each looked at once).
    """
    if value is None:
        if spec.type in ("any", "list", "dict"):
            return None
        return f"must be {_EXPECTED[spec.type]}, got null"
    if (
        isinstance(value, str)
        and spec.type not in ("string", "any")
        and TEMPLATE_MARKER.search(value)
    ):
        return None
    expected = _type_problem(spec.type, value)
    if expected is not None:
        return f"must be {expected}, got {_given(value, echo)}"
    if spec.choices and value not in spec.choices:
        listed = ", ".join(_quote(c) for c in spec.choices)
        return f"must be one of {listed}, got {_given(value, echo)}"
    if spec.minimum is not None and value < spec.minimum:
        return f"must be >= {spec.minimum:g}, got {_given(value, echo)}"
    if spec.maximum is not None and value > spec.maximum:
        return f"must be <= {spec.maximum:g}, got {_given(value, echo)}"
    return None


def _problems(specs: Mapping[str, ParamSpec], params: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for name in sorted(specs):
        spec = specs[name]
        if name not in params:
            if spec.required:
                problems.append(f"parameter {name!r} is required")
            continue
        value = params[name]
        if value is None and not spec.required:
            continue  # a resource's explicit null means "not set"
        problem = param_problem(spec, value)
        if problem is not None:
            problems.append(f"parameter {name!r} {problem}")
    for name in sorted(set(params) - set(specs)):
        quoted = clipped(name)  # quoted back: bounded
        problems.append(f"unknown parameter {quoted!r}{did_you_mean(quoted, specs)}")
    return problems


def validate_params(
    what: str, specs: Mapping[str, ParamSpec], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate ``params`` against ``specs``; return them with defaults applied.

    Raises :class:`pineapple.ConfigError` naming ``what`` (e.g.
    ``resource 'feed_data' (type feed_data)``), every bad parameter, and why
    (never repeating a given string: it may be a secret). Unknown parameters
    are errors: a typo must not pass silently.
    """
    problems = _problems(specs, params)
    if problems:
        raise ConfigError(f"{what}: {'; '.join(problems)}")
    out = dict(params)
    for name, spec in specs.items():
        if name not in out and spec.default is not None:
            out[name] = copy.deepcopy(spec.default)
    return out
