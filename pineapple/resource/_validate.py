"""Validators: checks a new value must pass before it is swapped in.

A resource's config entry may carry a ``validate`` block::

    "validate": {"min_rows": 1000, "max_rows": 5000000, "max_change_ratio": 0.5,
                 "required_columns": ["id", "score"], "unique_key": "id",
                 "hooks": ["my_plugin_check"]}

``max_change_ratio`` compares the new row count with the serving value's
(0.5 refuses a table that shrank or grew by more than half). ``hooks`` names
validators registered with :func:`register_validator` (by a plugin); a
resource type's own ``ResourceSchema.validator`` always runs. A validator is
``validate(old, new) -> None`` (``old`` is None on the first load) and raises
with a reason to refuse. The first check that refuses wins; its name and
reason become a :class:`ValidationRefusedError`.

What a "row" is depends on the value: a table with ``columns`` and
``column(name)`` (``FeedTable``), a sequence of row mappings (``FileRows``),
or a mapping whose values are rows (``FileMapping`` keyed by a column). Every
check walks the value at most once (bounded by its row count).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .._errors import ConfigError, DuplicateRegistrationError
from ._refusal import ValidationRefusedError

__all__ = [
    "ValidationSpec",
    "Validator",
    "register_validator",
    "registered_validators",
    "run_validators",
]

Validator = Callable[[Any, Any], None]
"""``validate(old, new) -> None``; raises (any ``Exception``) with a reason to refuse ``new``."""

_KEYS = ("min_rows", "max_rows", "max_change_ratio", "required_columns", "unique_key", "hooks")

_hooks: dict[str, Validator] = {}
_hooks_lock = threading.Lock()


def register_validator(name: str, validator: Validator) -> None:
    """Register a named validator that ``validate.hooks`` can list (call at import time)."""
    if not name or not callable(validator):
        raise TypeError("register_validator needs a name and a callable")
    with _hooks_lock:
        if name in _hooks:
            raise DuplicateRegistrationError(f"validator {name!r} is already registered")
        _hooks[name] = validator


def registered_validators() -> list[str]:
    """The names of every registered validator, sorted."""
    with _hooks_lock:
        return sorted(_hooks)


def _count(resource: str, key: str, raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ConfigError(f"resource {resource!r}: validate.{key} must be an integer >= 0")
    return raw


def _names(resource: str, key: str, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise ConfigError(f"resource {resource!r}: validate.{key} must be a list of names")
    return tuple(raw)


@dataclass(frozen=True)
class ValidationSpec:
    """The parsed ``validate`` block of one resource (every check optional)."""

    min_rows: int | None = None
    max_rows: int | None = None
    max_change_ratio: float | None = None
    required_columns: tuple[str, ...] = ()
    unique_key: str | None = None
    hooks: tuple[str, ...] = ()

    @classmethod
    def parse(cls, resource: str, raw: Any) -> ValidationSpec:
        """The block as a spec; :class:`ConfigError` naming the resource and key when bad."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ConfigError(f"resource {resource!r}: 'validate' must be an object")
        unknown = sorted(set(raw) - set(_KEYS))
        if unknown:
            raise ConfigError(
                f"resource {resource!r}: unknown validate keys {unknown} (known: {list(_KEYS)})"
            )
        ratio = raw.get("max_change_ratio")
        if ratio is not None and (
            isinstance(ratio, bool) or not isinstance(ratio, int | float) or ratio < 0
        ):
            raise ConfigError(f"resource {resource!r}: validate.max_change_ratio must be >= 0")
        key = raw.get("unique_key")
        if key is not None and (not isinstance(key, str) or not key):
            raise ConfigError(f"resource {resource!r}: validate.unique_key must be a column name")
        hooks = _names(resource, "hooks", raw["hooks"]) if "hooks" in raw else ()
        with _hooks_lock:
            missing = [h for h in hooks if h not in _hooks]
        if missing:
            raise ConfigError(
                f"resource {resource!r}: validate.hooks names unregistered validators {missing}"
            )
        spec = cls(
            min_rows=_count(resource, "min_rows", raw["min_rows"]) if "min_rows" in raw else None,
            max_rows=_count(resource, "max_rows", raw["max_rows"]) if "max_rows" in raw else None,
            max_change_ratio=None if ratio is None else float(ratio),
            required_columns=(
                _names(resource, "required_columns", raw["required_columns"])
                if "required_columns" in raw
                else ()
            ),
            unique_key=key,
            hooks=hooks,
        )
        if (
            spec.min_rows is not None
            and spec.max_rows is not None
            and spec.min_rows > spec.max_rows
        ):
            raise ConfigError(f"resource {resource!r}: validate.min_rows is over max_rows")
        return spec

    @property
    def empty(self) -> bool:
        """True when the block asks for no check at all."""
        return self == ValidationSpec()

    def to_dict(self) -> dict[str, Any]:
        """The block as given (only the keys that are set), for fingerprints and status."""
        out: dict[str, Any] = {}
        for key in _KEYS:
            value = getattr(self, key)
            if value is not None and value != ():
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


class _Refusal(Exception):
    """A built-in check's verdict: ``check`` refused for ``reason``."""

    def __init__(self, check: str, reason: str) -> None:
        super().__init__(reason)
        self.check = check
        self.reason = reason


def _row_count(check: str, value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        raise _Refusal(check, f"a {type(value).__name__} has no row count") from None


def _rows(check: str, value: Any) -> Sequence[Any] | None:
    """The value's rows (None for a columnar table); a refusal for other shapes."""
    if callable(getattr(value, "column", None)) and not callable(getattr(value, "columns", None)):
        return None  # columnar (FeedTable): checked column-wise
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    raise _Refusal(check, f"a {type(value).__name__} has no rows")


def _required_columns(columns: tuple[str, ...], value: Any) -> None:
    rows = _rows("required_columns", value)
    if rows is None:
        missing = [c for c in columns if c not in tuple(value.columns)]
        if missing:
            raise _Refusal("required_columns", f"missing column(s) {missing}")
        return
    for i, row in enumerate(rows):  # bounded: one pass over the value's rows
        if not isinstance(row, Mapping):
            raise _Refusal("required_columns", f"row {i} is a {type(row).__name__}, not an object")
        missing = [c for c in columns if c not in row]
        if missing:
            raise _Refusal("required_columns", f"row {i} has no column(s) {missing}")


def _key(cell: Any) -> Any:
    try:
        hash(cell)
    except TypeError:
        return orjson.dumps(cell, option=orjson.OPT_SORT_KEYS, default=repr)
    return cell


def _unique_key(key: str, value: Any) -> None:
    rows = _rows("unique_key", value)
    if rows is None:
        if key not in tuple(value.columns):
            raise _Refusal("unique_key", f"no column {key!r}")
        cells: Sequence[Any] = value.column(key)
    else:
        cells = []
        for i, row in enumerate(rows):  # bounded: one pass over the value's rows
            if not isinstance(row, Mapping) or key not in row:
                raise _Refusal("unique_key", f"row {i} has no column {key!r}")
            cells.append(row[key])
    seen: dict[Any, int] = {}
    for i, cell in enumerate(cells):  # bounded: one pass over one column
        k = _key(cell)
        if k in seen:
            raise _Refusal("unique_key", f"{key!r} repeats in rows {seen[k]} and {i}")
        seen[k] = i


def _builtin(spec: ValidationSpec, old: Any, new: Any) -> None:
    if spec.min_rows is not None or spec.max_rows is not None or spec.max_change_ratio is not None:
        counting = ("min_rows", "max_rows", "max_change_ratio")
        first = next(k for k in counting if getattr(spec, k) is not None)
        rows = _row_count(first, new)  # a refusal names the check that asked for the count
        if spec.min_rows is not None and rows < spec.min_rows:
            raise _Refusal("min_rows", f"{rows} rows, fewer than min_rows {spec.min_rows}")
        if spec.max_rows is not None and rows > spec.max_rows:
            raise _Refusal("max_rows", f"{rows} rows, more than max_rows {spec.max_rows}")
        if spec.max_change_ratio is not None and old is not None:
            before = _row_count("max_change_ratio", old)
            change = abs(rows - before) / before if before else 0.0
            if change > spec.max_change_ratio:
                raise _Refusal(
                    "max_change_ratio",
                    f"row count went from {before} to {rows} ({change:.0%} change), "
                    f"over max_change_ratio {spec.max_change_ratio:g}",
                )
    if spec.required_columns:
        _required_columns(spec.required_columns, new)
    if spec.unique_key is not None:
        _unique_key(spec.unique_key, new)


def run_validators(
    resource: str,
    spec: ValidationSpec,
    type_validator: Validator | None,
    old: Any,
    new: Any,
) -> None:
    """Run the built-in checks, the type's hook, then the named hooks, in that order.

    Raises :class:`ValidationRefusedError` for the first refusal (its message
    is not redacted here: the Manager does that). ``old`` is None on the
    first load; ``max_change_ratio`` is skipped then (and when ``old`` had
    no rows).
    """
    try:
        _builtin(spec, old, new)
    except _Refusal as refusal:
        raise ValidationRefusedError(resource, refusal.check, refusal.reason) from None
    with _hooks_lock:
        named = [(h, _hooks[h]) for h in spec.hooks if h in _hooks]
    hooks = ([("type validator", type_validator)] if type_validator is not None else []) + named
    for name, hook in hooks:
        try:
            hook(old, new)
        except Exception as exc:
            reason = str(exc) or type(exc).__name__
            raise ValidationRefusedError(resource, name, reason) from None
