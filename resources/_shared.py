"""How each built-in data type is published as a shared snapshot, and opened again.

``pineapple serve --workers N`` fetches the data resources once, in the
supervisor, and publishes each value as immutable files that every worker
opens (``server/_shared.py``). This module knows the value shapes:

- ``feed_data``: the Arrow IPC pair of ``_mapped_table`` (kind ``arrow``);
  workers map it read-only, so the kernel holds one copy of its pages.
- ``json_file`` / ``csv_file``: the value pickled (kind ``pickle``); each
  worker unpickles its own copy (these values are small lookup tables; the
  file is written by the supervisor into a directory only it and its workers
  can open, mode 0700).

``static`` and ``redis_connection`` are not shared: a static value is in the
config itself (no source to read) and a connection pool belongs to one
process.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

from ._feed_table import FeedTable
from ._mapped_table import (
    INDEX_SUFFIX,
    TABLE_SUFFIX,
    SnapshotFormatError,
    SnapshotWriteError,
    open_mapped_table,
    write_feed_snapshot,
)

__all__ = ["SHARED_TYPES", "open_snapshot", "snapshot_files", "write_snapshot"]

SHARED_TYPES = frozenset({"feed_data", "json_file", "csv_file"})
"""Resource types fetched once by the supervisor and shared with every worker."""

_PICKLE_SUFFIX = ".pickle"


def write_snapshot(type_name: str, value: Any, stem: Path) -> str:
    """Write ``value`` of ``type_name`` at ``stem``; the kind :func:`open_snapshot` needs.

    Raises ``SnapshotWriteError`` (nothing left behind) when it cannot be written.
    """
    if type_name == "feed_data" and isinstance(value, FeedTable):
        write_feed_snapshot(value, stem)
        return "arrow"
    path = stem.with_name(stem.name + _PICKLE_SUFFIX)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.rename(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SnapshotWriteError(f"cannot write snapshot {path}: {exc}") from exc
    return "pickle"


def open_snapshot(kind: str, stem: Path, generation: int) -> Any:
    """The value published at ``stem`` (a mapped table for kind ``arrow``)."""
    if kind == "arrow":
        return open_mapped_table(stem, generation=generation)
    if kind == "pickle":
        path = stem.with_name(stem.name + _PICKLE_SUFFIX)
        try:
            with open(path, "rb") as source:
                return pickle.load(source)
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise SnapshotFormatError(f"cannot read snapshot {path}: {exc}") from exc
    raise SnapshotFormatError(f"unknown snapshot kind {kind!r} at {stem}")


def snapshot_files(kind: str, stem: Path) -> list[Path]:
    """Every file a snapshot of ``kind`` at ``stem`` consists of (to unlink it)."""
    suffixes = (TABLE_SUFFIX, INDEX_SUFFIX) if kind == "arrow" else (_PICKLE_SUFFIX,)
    return [stem.with_name(stem.name + s) for s in suffixes]
