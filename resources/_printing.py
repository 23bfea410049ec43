"""Small shared pieces of the built-in printers: sizes and shapes of plain values."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["deep_sizeof", "estimate_sizeof", "human_bytes", "json_preview", "shape_of"]

_PREVIEW_LIMIT = 4096


def human_bytes(n: int) -> str:
    """``n`` bytes as a short human string (``1.5 MiB``)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - loop always returns


def deep_sizeof(value: Any, limit: int = 100_000) -> int:
    """An estimate of the memory held by a JSON-like value (visits at most ``limit`` objects)."""
    seen: set[int] = set()
    stack = [value]
    total = 0
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, Mapping):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
    return total


_SAMPLE = 1000


def estimate_sizeof(value: Any) -> int:
    """The memory held by a JSON-like value, for the memory budget.

    Exact (``deep_sizeof``) for up to ``_SAMPLE`` entries; above, the
    container itself plus ``_SAMPLE`` evenly spaced entries measured deeply
    and scaled to the entry count, so the cost is bounded whatever the size.
    """
    if isinstance(value, Mapping):
        entries: Sequence[Any] = list(value.items()) if len(value) > _SAMPLE else ()
    elif isinstance(value, list | tuple):
        entries = value if len(value) > _SAMPLE else ()
    else:
        entries = ()
    if not entries:
        return deep_sizeof(value)
    step = len(entries) // _SAMPLE
    sample = entries[::step][:_SAMPLE]  # bounded: _SAMPLE entries
    measured = sum(
        deep_sizeof(e) - (sys.getsizeof(e) if isinstance(value, Mapping) else 0) for e in sample
    )
    return sys.getsizeof(value) + measured * len(entries) // len(sample)


def shape_of(value: Any) -> str:
    """``list of 3``, ``mapping of 2 keys``, or the type name."""
    if isinstance(value, Mapping):
        return f"mapping of {len(value)} keys"
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return f"list of {len(value)}"
    return type(value).__name__


def json_preview(value: Any) -> str:
    """Indented JSON of ``value``, truncated to a few KiB."""
    try:
        text = json.dumps(value, indent=2, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _PREVIEW_LIMIT:
        text = text[:_PREVIEW_LIMIT] + f"\n... ({len(text) - _PREVIEW_LIMIT} more characters)"
    return text
