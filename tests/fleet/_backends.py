"""What the fleet tests share about the store's backends: tampering with stored bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

__all__ = ["Tamper", "tamper_file"]

Tamper = Callable[[str, str], None]
"""``tamper(object name, how)``: ``"flip"`` one byte of a stored object, or ``"truncate"`` it."""


def tamper_file(path: Path, how: str) -> None:
    """Flip the middle byte of ``path`` (``"flip"``) or cut it to half (``"truncate"``)."""
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[len(data) // 2 :]
    path.write_bytes(bytes(data))
