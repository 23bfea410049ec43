"""Typed parameter declarations shared by operator and resource schemas.

A :class:`ParamSpec` declares one parameter; :func:`validate_params` checks a
params mapping against a set of specs with pydantic (strict types: a string is
never silently turned into a number) and returns the params with defaults
applied. Errors name the owner (``what``), the parameter and what was wrong.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from ._error_text import clipped
from ._errors import ConfigError
from ._suggest import did_you_mean

__all__ = ["PARAM_TYPES", "ParamSpec", "ParamType", "validate_params"]

ParamType = Literal["string", "int", "float", "bool", "list", "dict", "any"]
PARAM_TYPES: tuple[str, ...] = ("string", "int", "float", "bool", "list", "dict", "any")

_PYDANTIC_TYPES: dict[str, Any] = {
    "string": pydantic.StrictStr,
    "int": pydantic.StrictInt,
    # JSON has one number type: an integral value is a valid float.
    "float": pydantic.StrictFloat | pydantic.StrictInt,
    "bool": pydantic.StrictBool,
    "list": list[Any],
    "dict": dict[str, Any],
    "any": Any,
}


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One declared parameter of an operator or resource type.

    ``type`` is one of ``string int float bool list dict any``. A parameter
    that is not ``required`` and absent takes ``default`` (``None``: left out).
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

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"ParamSpec type must be one of {PARAM_TYPES}, got {self.type!r}")


def _freeze(specs: Mapping[str, ParamSpec]) -> tuple[tuple[str, str, bool], ...]:
    # Only what the validator depends on: defaults (maybe unhashable lists) are not part of it.
    return tuple(sorted((name, spec.type, spec.required) for name, spec in specs.items()))


@functools.lru_cache(maxsize=256)
def _adapter(frozen: tuple[tuple[str, str, bool], ...]) -> pydantic.TypeAdapter[Any]:
    fields: dict[str, Any] = {}
    for name, type_name, required in frozen:
        typ = _PYDANTIC_TYPES[type_name]
        fields[name] = (typ, ...) if required else (typ | None, None)
    model = pydantic.create_model(
        "Params", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return pydantic.TypeAdapter(model)


def _problems(specs: Mapping[str, ParamSpec], errors: list[Any]) -> str:
    seen: dict[str, str] = {}
    for err in errors:
        loc = err.get("loc", ())
        name = clipped(loc[0]) if loc else "(params)"  # quoted back: bounded
        if name in seen:
            continue
        kind = err.get("type", "")
        if kind == "missing":
            seen[name] = f"parameter {name!r} is required"
        elif kind == "extra_forbidden":
            seen[name] = f"unknown parameter {name!r}{did_you_mean(name, specs)}"
        elif name in specs:
            # Never echo the input value: it may be a secret.
            seen[name] = f"parameter {name!r} must be of type {specs[name].type}"
        else:
            seen[name] = f"parameter {name!r}: {err.get('msg', 'invalid value')}"
    return "; ".join(seen.values())


def validate_params(
    what: str, specs: Mapping[str, ParamSpec], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate ``params`` against ``specs``; return them with defaults applied.

    Raises :class:`pineapple.ConfigError` naming ``what`` (e.g.
    ``resource 'feed_data' (type feed_data)``), every bad parameter, and why.
    Unknown parameters are errors: a typo must not pass silently.
    """
    adapter = _adapter(_freeze(specs))
    try:
        adapter.validate_python(dict(params))
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{what}: {_problems(specs, exc.errors())}") from None
    out = dict(params)
    for name, spec in specs.items():
        if name not in out and spec.default is not None:
            out[name] = copy.deepcopy(spec.default)
    return out
