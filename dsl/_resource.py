"""``BaseResource``: a typed declaration of one resource for ``Flow.resource``."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, ClassVar

from pineapple import ParamSpec

from ._errors import ValidationError

__all__ = ["BaseResource", "Interval", "normalize_interval"]

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


class BaseResource:
    """A resource of one type with its params and refresh interval.

    Generated subclasses (``dsl.generated.resources``) set the class attributes
    and give ``__init__`` keyword-only, typed params; they call
    ``super().__init__(interval=..., **params)``. Params whose value is
    ``None`` are left out (the runtime applies the schema's default).

    Class attributes: ``_name`` (the resource type), ``_default_interval``
    (seconds, used when ``interval`` is ``None``), ``_params_schema``.
    Instances: ``resource_type``, ``interval`` (seconds), ``params``.
    """

    _name: ClassVar[str] = ""
    _default_interval: ClassVar[float] = 0
    _params_schema: ClassVar[Mapping[str, ParamSpec]] = {}

    def __init__(self, *, interval: Interval | None = None, **params: Any) -> None:
        if not self._name:
            raise ValidationError(f"{type(self).__name__}: resource classes must set _name")
        what = f"resource type {self._name!r}"
        self.resource_type: str = self._name
        self.interval: int | float = normalize_interval(
            what, self._default_interval if interval is None else interval
        )
        self.params: dict[str, Any] = {k: v for k, v in params.items() if v is not None}

    def __repr__(self) -> str:
        names = ", ".join(sorted(self.params))
        return f"{type(self).__name__}(type={self.resource_type!r}, params=[{names}])"
