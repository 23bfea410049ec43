"""The values of ``json_file`` / ``csv_file``: a lookup table or a candidate list.

Both the fetcher (``_file_tables``) and the codec that shares them
(``_shared.FILE_CODEC``) use these, so they live below both.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FileMapping", "FileRows"]


class FileMapping(dict[str, Any]):
    """A lookup table read from a file; ``source`` is the file's path.

    ``nbytes``: the memory it holds (an estimate, measured once at load);
    ``stamp``: the file's identity when it was read (change detection).
    """

    source: str = ""
    nbytes: int = 0
    stamp: tuple[int, int, int, int] | None = None


class FileRows(list[dict[str, Any]]):
    """A candidate list read from a file; ``source``, ``nbytes``, ``stamp``: see ``FileMapping``."""

    source: str = ""
    nbytes: int = 0
    stamp: tuple[int, int, int, int] | None = None
