"""``BaseResource``: a typed declaration of one resource for ``Flow.resource``."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, ClassVar, cast

from pineapple import ParamSpec
from pineapple._params import ParamType

from ._errors import ValidationError

__all__ = ["BaseResource", "Interval", "normalize_interval", "params_schema"]

Interval = float | datetime.timedelta
"""Seconds (``int``/``float``) or a ``timedelta``; ``0``: the manager default, ``-1``: never."""


def normalize_interval(what: str, value: Interval) -> int | float:
    """``value`` as seconds (an ``int`` when integral, so the JSON reads ``600``, not ``600.0``)."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{what}: interval must be a number of seconds or a timedelta")
    if value < 0 and value != -1:
        raise ValidationError(f"{what}: interval must be >= 0, or -1 for never refresh")
    return int(value) if float(value).is_integer() else float(value)


# Apple's dict shape names types the JSON-Schema way; ParamSpec names them ours.
_TYPE_ALIASES = {
    "str": "string",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}
_SPEC_KEYS = frozenset({"type", "required", "default", "description", "templatable"})


def _spec(owner: str, key: str, entry: object) -> ParamSpec:
    if isinstance(entry, ParamSpec):
        return entry
    if not isinstance(entry, Mapping) or not set(entry) <= _SPEC_KEYS:
        raise ValidationError(
            f"{owner}: _params_schema[{key!r}] must be a ParamSpec or a dict with keys "
            f"{sorted(_SPEC_KEYS)}, got {entry!r}"
        )
    raw = str(entry.get("type", "any"))
    type_name = _TYPE_ALIASES.get(raw, raw)
    try:
        return ParamSpec(
            type=cast(ParamType, type_name),
            required=bool(entry.get("required", False)),
            default=entry.get("default"),
            description=str(entry.get("description", "")),
            templatable=bool(entry.get("templatable", False)),
        )
    except ValueError as exc:
        raise ValidationError(f"{owner}: _params_schema[{key!r}]: {exc}") from None


def params_schema(cls: type[BaseResource]) -> dict[str, ParamSpec]:
    """The class's ``_params_schema`` as ParamSpecs (Apple's dict shape accepted).

    ``{"dsn": {"type": "string", "required": True}}`` and
    ``{"dsn": ParamSpec(type="string", required=True)}`` mean the same.
    """
    owner = f"{cls.__name__} (resource type {cls._name!r})"
    # Only a schema declared with the type name (by the class that sets _name, or
    # below it) describes that type: a subclass that renames an inherited type
    # does not inherit its schema.
    mro = cls.__mro__
    named = next((i for i, c in enumerate(mro) if "_name" in vars(c)), len(mro))
    declared = next((i for i, c in enumerate(mro) if "_params_schema" in vars(c)), len(mro))
    if declared > named:
        return {}
    return {key: _spec(owner, key, entry) for key, entry in cls._params_schema.items()}


class BaseResource:
    """A resource of one type with its params and refresh interval.

    Generated subclasses (``dsl.generated.resources``) set the class attributes
    and give ``__init__`` keyword-only, typed params; they call
    ``super().__init__(interval=..., **params)``. Params whose value is
    ``None`` are left out (the runtime applies the schema's default).

    Class attributes: ``_name`` (the resource type), ``_default_interval``
    (seconds, used when ``interval`` is ``None``; 600 unless the class says),
    ``_params_schema`` (name -> ``ParamSpec``, or Apple's dict shape
    ``{"type": "string", "required": True}``). Instances: ``resource_type``,
    ``interval`` (seconds), ``params``, ``schema``. As in Apple, a class
    without ``_name`` may be typed after construction
    (``r = BaseResource(value=...); r.resource_type = "static"``);
    ``Flow.resource`` refuses an instance whose type is still unset.

    A hand-written subclass for a type that is not registered where the flow
    is compiled is validated against its own ``_params_schema``::

        class MyStoreResource(BaseResource):
            _name = "my_store"
            _params_schema = {"dsn": {"type": "string", "required": True}}

            def __init__(self, *, dsn: str, interval: float | None = None) -> None:
                super().__init__(interval=interval, dsn=dsn)
    """

    _name: ClassVar[str] = ""
    _default_interval: ClassVar[float] = 600
    _params_schema: ClassVar[Mapping[str, ParamSpec | Mapping[str, Any]]] = {}

    def __init__(self, *, interval: Interval | None = None, **params: Any) -> None:
        what = f"resource type {self._name!r}" if self._name else type(self).__name__
        self.resource_type: str = self._name
        self.interval: int | float = normalize_interval(
            what, self._default_interval if interval is None else interval
        )
        self.params: dict[str, Any] = {k: v for k, v in params.items() if v is not None}
        #: The class's own schema, used to validate params when the authoring
        #: process has not registered the type (a config written for a server
        #: whose plugins are not installed here).
        self.schema: dict[str, ParamSpec] = params_schema(type(self))

    def __repr__(self) -> str:
        names = ", ".join(sorted(self.params))
        return f"{type(self).__name__}(type={self.resource_type!r}, params=[{names}])"
