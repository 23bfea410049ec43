"""``write_atomically``: a file replaced whole, never seen half-written.

The bytes go to a temporary name beside the file, which is then renamed over
it (``rename`` is atomic within a directory): a reader opens the old file or
the new one. A failed write (a full directory) removes the temporary file and
leaves the old one as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (see module docs); ``OSError`` leaves it unchanged."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
        os.rename(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
