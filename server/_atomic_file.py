"""``write_atomically``: a file replaced whole, never seen half-written.

The bytes go to a temporary name beside the file (unique to the writing
process and thread, so writers of one directory never share it), which is
then renamed over it (``rename`` is atomic within a directory): a reader opens
the old file or the new one. A failed write (a full directory) removes the
temporary file and leaves the old one as it was. ``durable``: the bytes are
synced to the disk before the rename (a file that must survive a crash of the
host: the fleet's directory store and a pod's cache), which files under
``/dev/shm`` have no use for.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Replace ``path`` with ``data`` (see module docs); a failure leaves it unchanged."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.rename(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
