"""``config_diff``: what changed between two configs, by name (``GET /config/diff``).

The answer lists operators and resources added, removed and changed; for a
changed one, the names of its params added, removed and changed (a
resource's ``type``, ``interval`` and ``params`` entries count as params; an
operator's ``type_name`` and ``$metadata`` too), and the pipeline groups and
pipelines whose definition changed. Only names are shown, never a value, so
a changed password is "``mysql_dsn`` changed" and nothing more.

Both shapes of ``resource_config`` are read (``{"name": {...}}`` and
``{"resources": {"name": {...}}}``). Bounds: each list holds at most
:data:`MAX_NAMES` names (``truncated`` says when more changed); the configs
are the server's own kept bytes (at most ``--max-config-bytes`` each).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["MAX_NAMES", "config_diff"]

MAX_NAMES = 1000
"""Most names one list of the answer holds."""


def _parsed(data: bytes, label: str) -> dict[str, Any]:
    try:
        root = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"config {label} is not JSON: {exc}") from None
    if not isinstance(root, dict):
        raise ValueError(f"config {label} is not a JSON object")
    return root


def _section(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _operators(root: Mapping[str, Any]) -> dict[str, Any]:
    return _section(_section(root.get("pipeline_config")).get("operators"))


def _resources(root: Mapping[str, Any]) -> dict[str, Any]:
    config = _section(root.get("resource_config"))
    nested = config.get("resources")
    entries = nested if isinstance(nested, dict) else config
    return {name: _fields(entry) for name, entry in entries.items()}


def _fields(entry: Any) -> dict[str, Any]:
    """A resource entry's params as one flat mapping (both shapes; ``type_name`` is ``type``)."""
    if not isinstance(entry, dict):
        return {"": entry}
    flat = {("type" if k == "type_name" else k): v for k, v in entry.items() if k != "params"}
    flat.update(_section(entry.get("params")))
    return flat


def _cap(names: list[str], out: dict[str, Any]) -> list[str]:
    if len(names) > MAX_NAMES:
        out["truncated"] = True
    return names[:MAX_NAMES]


def _named(old: Mapping[str, Any], new: Mapping[str, Any], params: bool) -> dict[str, Any]:
    """Added, removed and changed names of two mappings (with each changed one's params)."""
    out: dict[str, Any] = {}
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    out["added"] = _cap(added, out)
    out["removed"] = _cap(removed, out)
    if not params:
        out["changed"] = _cap(changed, out)
        return out
    listed = []
    for name in _cap(changed, out):  # bounded: MAX_NAMES
        a, b = _section(old[name]), _section(new[name])
        listed.append({"name": name, "params": _named(a, b, params=False)})
    out["changed"] = listed
    return out


def config_diff(old: bytes, new: bytes) -> dict[str, Any]:
    """What changed from config ``old`` to config ``new`` (see module docs); ``ValueError``
    when either is not a JSON object."""
    a, b = _parsed(old, "from"), _parsed(new, "to")
    pipelines_a = _section(_section(a.get("pipeline_config")).get("pipeline_map"))
    pipelines_b = _section(_section(b.get("pipeline_config")).get("pipeline_map"))
    rest = ("pipeline_config", "resource_config", "pipeline_group")
    return {
        "operators": _named(_operators(a), _operators(b), params=True),
        "resources": _named(_resources(a), _resources(b), params=True),
        "pipelines": _named(pipelines_a, pipelines_b, params=False),
        "pipeline_groups": _named(
            _section(a.get("pipeline_group")), _section(b.get("pipeline_group")), params=False
        ),
        "other": _named(
            {k: v for k, v in a.items() if k not in rest},
            {k: v for k, v in b.items() if k not in rest},
            params=False,
        ),
    }
