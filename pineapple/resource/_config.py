"""Reading ``resource_config`` out of a unified config.

Two shapes are accepted and normalised to :class:`ResourceEntry`::

    {"feed": {"type": "feed_data", "interval": 600, "params": {...}}}
    {"resources": {"redis": {"type_name": "redis_connection", "interval": -1, "addr": "..."}}}

String values may read the environment: ``${VAR}`` (an error when unset) and
``${VAR:-default}``. Interpolation happens after parsing, so a secret from the
environment never passes through the JSON text. Every interpolated value
worth masking (``_redact.is_secret_value``: not short, not a
number, not true/false) is kept in :attr:`ResourceEntry.secrets`, and the
Manager masks it wherever it appears (errors, status, logs, printer output).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError
from .._json_object import JSONObjectError, loads_object
from ._interval import check_interval
from ._redact import is_secret_value
from ._validate import ValidationSpec

__all__ = [
    "ResourceEntry",
    "interpolate_env",
    "join_problems",
    "parse_resource_config",
    "parse_resource_entries",
    "read_root_config",
]

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")
_ENTRY_KEYS = {"type", "type_name", "interval", "params", "validate", "keep_previous", "replay"}


@dataclass(frozen=True)
class ResourceEntry:
    """One declared resource: name, type, interval (seconds; 0 default, -1 never), params.

    ``secrets``: the values that ``${VAR}`` interpolation put into ``params``
    (those worth masking); not part of the fingerprint (``params`` holds them).
    ``validate`` (the entry's ``validate`` block), ``keep_previous`` and ``replay``
    (a refreshed value answers the server's sample of recent requests before it
    is swapped in: ``Manager.set_replay``) are part of the fingerprint: changing
    them changes the entry.
    """

    name: str
    type: str
    interval: float
    params: Mapping[str, Any]
    secrets: frozenset[str] = frozenset()
    validate: ValidationSpec = field(default_factory=ValidationSpec)
    keep_previous: bool = False
    replay: bool = False

    def fingerprint(self) -> str:
        """A stable identity of the entry: equal fingerprints mean an unchanged entry."""
        identity: dict[str, Any] = {
            "type": self.type,
            "interval": self.interval,
            "params": self.params,
        }
        if not self.validate.empty:
            identity["validate"] = self.validate.to_dict()
        if self.keep_previous:
            identity["keep_previous"] = True
        if self.replay:
            identity["replay"] = True
        return json.dumps(identity, sort_keys=True, default=repr)


def read_root_config(data: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    """Parse a unified config given as JSON bytes/str or an already parsed mapping."""
    if isinstance(data, Mapping):
        return data
    try:
        return loads_object(data)
    except JSONObjectError as exc:
        raise ConfigError(f"config is {exc}") from None


def interpolate_env(
    value: Any,
    where: str,
    env: Mapping[str, str] | None = None,
    found: set[str] | None = None,
) -> Any:
    """``value`` with ``${VAR}`` / ``${VAR:-default}`` replaced in every string.

    With ``found``, every substituted value worth masking is added to it. Every
    variable that is not set is named in one :class:`ConfigError`.
    """
    environ = os.environ if env is None else env
    missing: list[str] = []

    def sub(match: re.Match[str]) -> str:
        name, default = match.group("name"), match.group("default")
        if name in environ:
            text = environ[name]
        elif default is not None:
            text = default
        else:
            if name not in missing:
                missing.append(name)
            return match.group(0)
        if found is not None and is_secret_value(text):
            found.add(text)
        return text

    def walk(value: Any) -> Any:  # each value once: bounded by the config's size
        if isinstance(value, str):
            return _VAR.sub(sub, value) if "${" in value else value
        if isinstance(value, Mapping):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    result = walk(value)
    if len(missing) == 1:
        raise ConfigError(f"{where}: environment variable {missing[0]!r} is not set")
    if missing:
        names = ", ".join(repr(m) for m in missing)
        raise ConfigError(f"{where}: environment variables {names} are not set")
    return result


def _interval(name: str, raw: Any) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ConfigError(f"resource {name!r}: interval must be a number of seconds")
    return check_interval(name, raw)


def _entry(name: str, raw: Any, env: Mapping[str, str] | None) -> ResourceEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"resource {name!r}: entry must be an object")
    type_name = raw.get("type", raw.get("type_name"))
    if not isinstance(type_name, str) or not type_name:
        raise ConfigError(f"resource {name!r}: missing 'type' (or 'type_name')")
    if "params" in raw:
        params = raw["params"]
        if not isinstance(params, Mapping):
            raise ConfigError(f"resource {name!r}: 'params' must be an object")
        extra = sorted(set(raw) - _ENTRY_KEYS)
        if extra:
            raise ConfigError(f"resource {name!r}: unknown keys {extra} beside 'params'")
    else:  # the flat shape: every key but type/interval/validate/keep_previous/replay is a param
        params = {k: v for k, v in raw.items() if k not in _ENTRY_KEYS}
    where = f"resource {name!r}"
    interpolated: set[str] = set()
    keep_previous = raw.get("keep_previous", False)
    if not isinstance(keep_previous, bool):
        raise ConfigError(f"resource {name!r}: 'keep_previous' must be true or false")
    replay = raw.get("replay", False)
    if not isinstance(replay, bool):
        raise ConfigError(f"resource {name!r}: 'replay' must be true or false")
    return ResourceEntry(
        name=name,
        type=type_name,
        interval=_interval(name, raw.get("interval")),
        params=interpolate_env(dict(params), where, env, interpolated),
        secrets=frozenset(interpolated),
        validate=ValidationSpec.parse(name, raw.get("validate")),
        keep_previous=keep_previous,
        replay=replay,
    )


def parse_resource_config(
    root: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> list[ResourceEntry]:
    """The resource entries of a unified config, in name order (empty when none).

    Every bad entry is named in one :class:`ConfigError`.
    """
    entries, problems = parse_resource_entries(root, env)
    if problems:
        raise ConfigError(join_problems(problems))
    return entries


def parse_resource_entries(
    root: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> tuple[list[ResourceEntry], list[str]]:
    """The good entries, in name order, and a message for each bad one."""
    section = root.get("resource_config")
    if section is None:
        return [], []
    if not isinstance(section, Mapping):
        raise ConfigError("resource_config must be an object")
    raw = section.get("resources", section) if "resources" in section else section
    if not isinstance(raw, Mapping):
        raise ConfigError("resource_config.resources must be an object")
    entries: list[ResourceEntry] = []
    problems: list[str] = []
    for name in sorted(raw):  # every entry, so that one error names every problem
        try:
            entries.append(_entry(str(name), raw[name], env))
        except ConfigError as exc:
            problems.append(str(exc))
    return entries, problems


def join_problems(problems: list[str]) -> str:
    """One message for several problems: the only one, or a count and one per line."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)
