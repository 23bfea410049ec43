"""The codecs of the built-in data types: how each is shared between processes and hosts.

``pineapple serve --workers N`` fetches a type with a codec once, in the
supervisor, and every worker opens what it published
(``server/workers/supervisor/_publishing.py``); a fleet producer publishes the
same files to every pod (``server/fleet``).
Each schema names its codec (``ResourceSchema.codec``):

- ``feed_data``: :data:`FEED_CODEC`, the Arrow IPC pair of ``_mapped_table``;
  workers map it read-only, so the kernel holds one copy of its pages.
- ``json_file`` / ``csv_file``: :data:`FILE_CODEC`, the value as JSON; each
  process parses its own copy (these values are small lookup tables). JSON,
  not pickle: what a process opens may have come from another host, and
  nothing downloaded is unpickled.

``static`` and ``redis_connection`` have none: a static value is in the config
itself (no source to read) and a connection pool belongs to one process.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from pineapple.resource.lowlevel import SnapshotFormatError, SnapshotWriteError

from ._feed_table import FeedTable
from ._file_values import FileMapping, FileRows
from ._mapped_table import (
    MappedFeedTable,
    copy_feed_snapshot,
    open_mapped_table,
    release_arrow_pool,
    write_feed_snapshot,
)

__all__ = ["FEED_CODEC", "FILE_CODEC", "FeedCodec", "FileCodec"]

_INT64 = (-(2**63), 2**64 - 1)
"""The integers orjson writes (it refuses wider ones, and reads them back as floats)."""


class FeedCodec:
    """A ``FeedTable`` as Arrow IPC files that every worker maps read-only."""

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        if not isinstance(value, FeedTable):
            raise SnapshotWriteError(f"cannot write snapshot {stem}: not a FeedTable")
        if isinstance(value, MappedFeedTable):  # already these files: copied, not encoded
            copied = copy_feed_snapshot(value, stem)
            if copied is not None:
                return copied
        return write_feed_snapshot(value, stem)

    def open(self, stem: Path, generation: int) -> Any:
        return open_mapped_table(stem, generation=generation)

    def release_memory(self) -> None:
        """Hand Arrow's pool of freed buffers back to the OS (a ``CodecHooks`` hook)."""
        release_arrow_pool()


def _needs_wide(value: Any) -> bool:
    """``value`` holds an integer wider than 64 bits or a non-finite float.

    orjson cannot round-trip those (it refuses wide integers and writes
    ``inf`` as null); a ``csv_file`` cell such as ``1e999`` or a 30-digit id
    makes them. The walk visits each container once (an explicit stack of
    iterables), by exact type: a subclass of int that is too wide is refused
    by orjson (``SnapshotWriteError``) rather than missed silently.
    """
    stack = [value.values() if isinstance(value, dict) else value]
    low, high = _INT64
    while stack:
        for item in stack.pop():
            kind = type(item)  # exact types: what JSON and CSV parsing make
            if kind is str:
                continue
            if kind is dict:
                stack.append(item.values())
            elif kind is list:
                stack.append(item)
            elif kind is float:
                if item != item or item in (math.inf, -math.inf):
                    return True
            elif kind is int and not low <= item <= high:
                return True
    return False


class FileCodec:
    """A ``FileMapping`` / ``FileRows`` (or a plain dict/list of JSON values) as one JSON file.

    ``<stem>.json``: written by orjson, read by orjson. A value with an
    integer wider than 64 bits or a non-finite float is written by the
    standard library as ``<stem>.wide.json`` instead (it round-trips both),
    and read back by it. The document: ``{"kind", "source", "nbytes",
    "stamp", "data"}``; ``kind`` restores the value's class.
    """

    suffix = ".json"
    wide_suffix = ".wide.json"

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        kinds = ((FileMapping, "mapping"), (FileRows, "rows"), (dict, "dict"), (list, "list"))
        kind = next((k for cls, k in kinds if isinstance(value, cls)), None)
        if kind is None:
            raise SnapshotWriteError(
                f"cannot write snapshot {stem}: a {type(value).__name__}, not a file table"
            )
        doc = {
            "kind": kind,
            "source": getattr(value, "source", ""),
            "nbytes": getattr(value, "nbytes", 0),
            "stamp": getattr(value, "stamp", None),
            "data": value,
        }
        wide = _needs_wide(value)
        path = stem.with_name(stem.name + (self.wide_suffix if wide else self.suffix))
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            data = json.dumps(doc).encode() if wide else orjson.dumps(doc)
            with open(tmp, "wb") as out:
                out.write(data)
            os.rename(tmp, path)
        except (OSError, TypeError, ValueError) as exc:
            tmp.unlink(missing_ok=True)
            raise SnapshotWriteError(f"cannot write snapshot {path}: {exc}") from exc
        return (path,)

    def open(self, stem: Path, generation: int) -> Any:
        path = stem.with_name(stem.name + self.suffix)
        wide = not path.exists()
        if wide:
            path = stem.with_name(stem.name + self.wide_suffix)
        try:
            with open(path, "rb") as source:
                data = source.read()
            doc = json.loads(data) if wide else orjson.loads(data)
            kind, body = doc["kind"], doc["data"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SnapshotFormatError(f"cannot read snapshot {path}: {exc}") from exc
        if kind in ("mapping", "dict") and isinstance(body, dict):
            value: Any = FileMapping(body) if kind == "mapping" else body
        elif kind in ("rows", "list") and isinstance(body, list):
            value = FileRows(body) if kind == "rows" else body
        else:
            raise SnapshotFormatError(f"cannot read snapshot {path}: kind {kind!r} of its data")
        if isinstance(value, FileMapping | FileRows):
            value.source = str(doc.get("source") or "")
            value.nbytes = int(doc.get("nbytes") or 0)
            stamp = doc.get("stamp")
            value.stamp = tuple(stamp) if isinstance(stamp, list) and len(stamp) == 4 else None
        return value


FEED_CODEC = FeedCodec()
"""The codec of ``feed_data``."""
FILE_CODEC = FileCodec()
"""The codec of ``json_file`` and ``csv_file`` (JSON: it may cross hosts)."""
