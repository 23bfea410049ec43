"""From a config entry to a fetcher: registry lookup, param checks, the factory call.

A factory receives the validated params only (``FetcherFactory``); one that
also needs the entry it builds (its resource name: a fleet pod follows the
announcements of that name) asks :func:`entry_being_built` during the call.

Guarantees: the entry is set in a ``ContextVar`` around the one factory call
and reset after it (also when it raises), so a factory that wraps another
(``server/workers/_store.py``'s publishing registry around a fleet pod's)
sees the same entry, and no other thread or later call sees it.
"""

from __future__ import annotations

import dataclasses
import os
from contextvars import ContextVar
from dataclasses import dataclass

from .._error_text import clipped
from .._errors import ConfigError, PineappleError
from .._params import validate_params
from .._suggest import did_you_mean
from ._config import ResourceEntry
from ._redact import redact, secrets_of
from ._registry import Fetcher, Printer, Registry
from ._validate import Validator

__all__ = ["BuiltEntry", "build_entry", "entry_being_built"]

_BUILDING: ContextVar[ResourceEntry | None] = ContextVar(
    "pineapple_entry_being_built", default=None
)


def entry_being_built() -> ResourceEntry | None:
    """The config entry whose fetcher the current factory call builds (None outside one)."""
    return _BUILDING.get()


@dataclass(frozen=True)
class BuiltEntry:
    """A config entry made ready to register: the interval resolved, the fetcher built."""

    entry: ResourceEntry
    fetcher: Fetcher
    printer: Printer | None
    secrets: frozenset[str]
    validator: Validator | None = None


def build_entry(
    registry: Registry, entry: ResourceEntry, base_dir: str | None = None
) -> BuiltEntry:
    """Look up the entry's type, validate its params and call the type's factory.

    With ``base_dir`` (the config file's folder), a relative value of a path
    param (``ParamSpec(path=True)``) is resolved against it, so a config means
    the same files whatever the working directory.

    Every failure is a :class:`ConfigError` naming the resource; the message
    is redacted with the secrets found in the entry's params and its
    ``${VAR}`` values.
    """
    secrets = frozenset(secrets_of(entry.params)) | entry.secrets
    name, type_name = clipped(entry.name), clipped(entry.type)  # quoted: bounded
    what = f"resource {name!r} (type {type_name!r})"
    schema = registry.get(entry.type)
    factory = registry.factory(entry.type)
    if schema is None or factory is None:
        names = [s.name for s in registry.all()]
        raise ConfigError(
            f"resource {name!r}: unknown type {type_name!r}"
            f"{did_you_mean(entry.type, names)} (registered: {', '.join(names) or 'none'})"
        )
    try:
        params = validate_params(what, schema.params, entry.params)
    except ConfigError as exc:  # a message may quote a value
        raise ConfigError(redact(str(exc), secrets)) from None
    if base_dir is not None:
        for key, spec in schema.params.items():
            value = params.get(key)
            if spec.path and isinstance(value, str) and value and not os.path.isabs(value):
                params[key] = os.path.join(base_dir, value)
    interval = entry.interval if entry.interval != 0 else float(schema.default_interval)
    token = _BUILDING.set(entry)
    try:
        fetcher = factory(params)
    except PineappleError as exc:
        raise ConfigError(redact(f"{what}: {exc}", secrets)) from None
    except Exception as exc:
        raise ConfigError(redact(f"{what}: {type(exc).__name__}: {exc}", secrets)) from None
    finally:
        _BUILDING.reset(token)
    resolved = dataclasses.replace(entry, interval=interval)
    return BuiltEntry(resolved, fetcher, schema.printer, secrets, schema.validator)
