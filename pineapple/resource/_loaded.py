"""``LoadedConfig``: a unified config parsed once, for every step of a build.

A build (or a ``check``) reads one file and hands the same parsed value to
the Engine (``root``), the Manager (``entries``, ``source_dir``) and the
dependency check (``root``), and masks the same ``secrets`` in every message.
Nothing here raises: a config that is not a JSON object keeps its
``error``, and a bad ``resource_config`` keeps its ``problems``, so that a
``check`` can still name every other problem of the file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from ._config import ResourceEntry, join_problems, parse_resource_entries, read_root_config
from ._redact import secrets_of

__all__ = ["LoadedConfig", "load_config"]


@dataclass(frozen=True)
class LoadedConfig:
    """One config file, parsed once.

    ``root``: the parsed JSON object (None when ``error`` says why not);
    ``content_hash``: sha256 of the bytes; ``secrets``: every value to mask
    (password-like params, DSN passwords, ``${VAR}`` values worth masking);
    ``entries``: the good ``resource_config`` entries, interpolated, in name
    order, and ``problems`` one message per bad one; ``source_dir``: the
    config file's folder (relative paths in params resolve against it).
    """

    data: bytes
    root: Mapping[str, Any] | None
    error: ConfigError | None
    content_hash: str
    secrets: frozenset[str]
    entries: tuple[ResourceEntry, ...]
    problems: tuple[str, ...]
    source_dir: Path | None

    def resource_error(self) -> ConfigError | None:
        """Why the resources of this config cannot be registered, or None."""
        if self.error is not None:
            return self.error
        return ConfigError(join_problems(list(self.problems))) if self.problems else None


def load_config(
    data: bytes,
    *,
    env: Mapping[str, str] | None = None,
    source_dir: str | os.PathLike[str] | None = None,
) -> LoadedConfig:
    """Parse ``data`` once: root, hash, secrets, resource entries (never raises).

    ``env``: what ``${VAR}`` reads (default ``os.environ``).
    """
    root: Mapping[str, Any] | None = None
    error: ConfigError | None = None
    entries: list[ResourceEntry] = []
    problems: list[str] = []
    secrets: set[str] = set()
    try:
        root = read_root_config(data)
    except ConfigError as exc:
        error = exc
    if root is not None:
        secrets |= secrets_of(root)
        try:
            entries, problems = parse_resource_entries(root, env)
        except ConfigError as exc:
            problems = [str(exc)]
        for entry in entries:
            secrets |= secrets_of(entry.params) | entry.secrets
    return LoadedConfig(
        data=data,
        root=root,
        error=error,
        content_hash=hashlib.sha256(data).hexdigest(),
        secrets=frozenset(secrets),
        entries=tuple(entries),
        problems=tuple(problems),
        source_dir=None if source_dir is None else Path(os.path.abspath(source_dir)),
    )
