"""From a config entry to a fetcher: registry lookup, param checks, the factory call."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from .._error_text import clipped
from .._errors import ConfigError, PineappleError
from .._params import validate_params
from .._suggest import did_you_mean
from ._config import ResourceEntry
from ._redact import redact, secrets_of
from ._registry import Fetcher, NamedFetcherFactory, Printer, Registry
from ._validate import Validator

__all__ = ["BuiltEntry", "build_entry"]


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

    A factory that is a :class:`NamedFetcherFactory` is called with the
    entry's name too (``for_resource(name, params)``).

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
    declared = dict(params)  # before the paths resolve: the same on every host
    if base_dir is not None:
        for key, spec in schema.params.items():
            value = params.get(key)
            if spec.path and isinstance(value, str) and value and not os.path.isabs(value):
                params[key] = os.path.join(base_dir, value)
    interval = entry.interval if entry.interval != 0 else float(schema.default_interval)
    try:
        if isinstance(factory, NamedFetcherFactory):
            fetcher = factory.for_resource(entry.name, params, declared)
        else:
            fetcher = factory(params)
    except PineappleError as exc:
        raise ConfigError(redact(f"{what}: {exc}", secrets)) from None
    except Exception as exc:
        raise ConfigError(redact(f"{what}: {type(exc).__name__}: {exc}", secrets)) from None
    resolved = dataclasses.replace(entry, interval=interval)
    return BuiltEntry(resolved, fetcher, schema.printer, secrets, schema.validator)
