"""The config file before a build: read it (bounded), say what the path is, what it holds.

Reading never blocks on the path's type (a FIFO, a device) and never reads
past the byte limit; a path that cannot be read as a config is a
:class:`ConfigFileError` (step ``read`` of a build).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from pineapple import _config_file as config_file
from pineapple._config_file import MAX_CONFIG_BYTES_FLAG
from pineapple._file_kind import file_kind
from pineapple.resource.lowlevel import load_config

from ._build_error import BuildError

__all__ = ["ConfigFileError", "describe_path", "example_request", "read_config_file", "secrets_in"]


class ConfigFileError(BuildError):
    """The config path cannot be read as a config: missing, not a regular file, or too big."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__("read", f"{str(path)!r} {message}")
        self.path = path


def describe_path(path: Path) -> dict[str, Any]:
    """What the config path is now (symlinks followed), for ``GET /config``; never blocks.

    ``{"type": "regular file", "regular": True, "size": 123}``, or ``"type":
    "FIFO"`` etc. with ``regular`` False, or ``"type": None`` with the error.
    """
    try:
        st = os.stat(path)  # a stat never opens the file: safe on a FIFO or a device
    except OSError as exc:
        return {"type": None, "regular": False, "error": exc.strerror or str(exc)}
    kind = file_kind(st.st_mode)
    return {"type": kind, "regular": kind == "regular file", "size": st.st_size}


def read_config_file(path: Path, max_bytes: int, limit_name: str = MAX_CONFIG_BYTES_FLAG) -> bytes:
    """The file's bytes, or :class:`ConfigFileError` (step ``read``) saying why not.

    Read by :func:`pineapple._config_file.read_config_file`: never blocks on
    the path's type (a FIFO, a device), never reads past ``max_bytes``.
    """
    try:
        return config_file.read_config_file(path, max_bytes, limit_name)
    except config_file.ConfigReadError as exc:
        raise ConfigFileError(path, exc.reason) from None


def secrets_in(data: bytes, env: Mapping[str, str] | None = None) -> set[str]:
    """Every secret a config holds (params named like passwords, DSN passwords, env values).

    ``env``: the environment ``${VAR}`` reads (default ``os.environ``), as the build uses it.
    """
    return set(load_config(data, env=env).secrets)


def example_request(data: bytes) -> bytes:
    """A request body that the config's ``flow_contract`` accepts (for the start-up hint)."""
    try:
        root = orjson.loads(data)
        contract = root.get("flow_contract") or {}
        common = {str(f): "demo" for f in contract.get("common_input") or ()}
        fields = [str(f) for f in contract.get("item_input") or ()]
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        common, fields = {}, []
    items = [{f: "demo" for f in fields}] if fields else []
    return orjson.dumps({"common": common, "items": items})
