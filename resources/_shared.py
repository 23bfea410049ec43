"""The codecs of the built-in data types: how each is shared by ``serve --workers N``.

``pineapple serve --workers N`` fetches a type with a codec once, in the
supervisor, and every worker opens what it published (``server/workers/supervisor/_publishing.py``).
Each schema names its codec (``ResourceSchema.codec``):

- ``feed_data``: :data:`FEED_CODEC`, the Arrow IPC pair of ``_mapped_table``;
  workers map it read-only, so the kernel holds one copy of its pages.
- ``json_file`` / ``csv_file``: :data:`FILE_CODEC`, the value pickled; each
  worker unpickles its own copy (these values are small lookup tables).

``static`` and ``redis_connection`` have none: a static value is in the config
itself (no source to read) and a connection pool belongs to one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pineapple.resource.lowlevel import PickleCodec, SnapshotWriteError

from ._feed_table import FeedTable
from ._mapped_table import open_mapped_table, release_arrow_pool, write_feed_snapshot

__all__ = ["FEED_CODEC", "FILE_CODEC", "FeedCodec"]


class FeedCodec:
    """A ``FeedTable`` as Arrow IPC files that every worker maps read-only."""

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        if not isinstance(value, FeedTable):
            raise SnapshotWriteError(f"cannot write snapshot {stem}: not a FeedTable")
        return write_feed_snapshot(value, stem)

    def open(self, stem: Path, generation: int) -> Any:
        return open_mapped_table(stem, generation=generation)

    def release_memory(self) -> None:
        """Hand Arrow's pool of freed buffers back to the OS (a ``CodecHooks`` hook)."""
        release_arrow_pool()


FEED_CODEC = FeedCodec()
"""The codec of ``feed_data``."""
FILE_CODEC = PickleCodec()
"""The codec of ``json_file`` and ``csv_file``."""
