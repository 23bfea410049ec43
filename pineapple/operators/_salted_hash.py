"""The salted FNV-1a ranking shared by ``reorder_shuffle_by_salt`` and ``reorder_topn_boost``."""

from __future__ import annotations

import re
from typing import Any

from ..engine._gofmt import format_g, go_json

__all__ = ["salt_text", "salted_rank"]

_OFFSET = 0xCBF29CE484222325
_PRIME = 0x100000001B3
_MASK = 0xFFFFFFFFFFFFFFFF
_UINT = re.compile(r"^[0-9]+$")


def salt_text(value: Any) -> str:
    """A value as text for hashing: Go ``%g`` for numbers, "" for null, JSON for composites."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return format_g(float(value))
    if value is None:
        return ""
    return go_json(value).decode()


def _fnv1a(data: bytes) -> int:
    h = _OFFSET
    for byte in data:
        h = ((h ^ byte) * _PRIME) & _MASK
    return h


def _uint(text: str) -> int:
    if _UINT.match(text):
        n = int(text)
        if n <= _MASK:
            return n
    return 0


def salted_rank(prefix: str, values: list[Any]) -> list[int]:
    """Item indices sorted by (hash(prefix + text) / 2**64, numeric id, index)."""
    keyed = []
    for i, v in enumerate(values):
        text = salt_text(v)
        r = float(_fnv1a((prefix + text).encode())) / 18446744073709551616.0
        keyed.append((r, _uint(text), i))
    keyed.sort()
    return [k[2] for k in keyed]
