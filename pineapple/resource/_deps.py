"""Start-up check: every ``resource_name`` an operator uses is declared."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from .._errors import ConfigError, MissingResourceError
from ._config import read_root_config
from ._loaded import LoadedConfig

__all__ = ["referenced_resources", "resource_names", "validate_resource_deps"]


class _HasNames(Protocol):
    def names(self) -> list[str]: ...


def resource_names(value: Any) -> Iterator[str]:
    """Every ``resource_name`` string at any depth of an operator's params.

    Bounded by the params' own size: each value is visited once (JSON params
    have no cycles; the DSL's params are JSON-checked before compile).
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "resource_name" and isinstance(item, str):
                yield item
            else:
                yield from resource_names(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from resource_names(item)


def referenced_resources(
    config: LoadedConfig | bytes | str | Mapping[str, Any],
) -> list[tuple[str, str]]:
    """``(operator, resource_name)`` for every ``resource_name`` at any depth, sorted."""
    if isinstance(config, LoadedConfig):
        if config.root is None:
            raise config.error or ConfigError("config is not a JSON object")
        root = config.root
    else:
        root = read_root_config(config)
    pipeline = root.get("pipeline_config", {})
    if not isinstance(pipeline, Mapping):
        raise ConfigError("pipeline_config must be an object")
    operators = pipeline.get("operators", {})
    if not isinstance(operators, Mapping):
        raise ConfigError("pipeline_config.operators must be an object")
    found = {(str(op), name) for op, params in operators.items() for name in resource_names(params)}
    return sorted(found)


def validate_resource_deps(
    config: LoadedConfig | bytes | str | Mapping[str, Any], provider: _HasNames
) -> None:
    """Raise :class:`MissingResourceError` listing each operator's undeclared resource."""
    have = set(provider.names())
    missing = [(op, name) for op, name in referenced_resources(config) if name not in have]
    if missing:
        listing = ", ".join(f"operator {op!r} needs resource {name!r}" for op, name in missing)
        raise MissingResourceError(f"missing resources: {listing}", missing)
