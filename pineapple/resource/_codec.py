"""``SnapshotCodec``: how a resource type's values are shared between processes.

With ``pineapple serve --workers N`` one process (the supervisor) fetches a
value and every worker maps it. A type opts in by naming a codec in its
schema (``ResourceSchema(codec=...)``): the codec writes a value as files under
a stem and opens them again in another process. A type without a codec is
not shared: each worker fetches its own value and the supervisor never does
(connection pools, values that are cheap to fetch or belong to one process).

:class:`PickleCodec` suits small values of plain Python types (lookup tables);
a large table wants a format that every worker can map without a copy (the
built-in ``feed_data`` type writes Arrow IPC files).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._errors import PineappleError

__all__ = ["PickleCodec", "SnapshotCodec", "SnapshotFormatError", "SnapshotWriteError"]


class SnapshotWriteError(PineappleError):
    """A snapshot could not be written (e.g. its directory is full); nothing was published."""


class SnapshotFormatError(PineappleError):
    """A snapshot file is not one this version wrote (or is damaged)."""


@runtime_checkable
class SnapshotCodec(Protocol):
    """Writes a value as immutable files under a stem, and opens them again.

    ``write`` creates only files named ``<stem.name><suffix>`` beside ``stem``
    and returns them (the store unlinks exactly these once no worker may open
    them); on failure it leaves none behind and raises :class:`SnapshotWriteError`.
    ``open`` (in another process) returns the value, or raises
    :class:`SnapshotFormatError`; ``generation`` is the publish's number, for
    values that show it in their status. A codec whose format keeps an
    allocator's pool (Arrow's) may also define ``release_memory()``
    (``CodecHooks``), called after each publish.
    """

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        """Write ``value`` at ``stem``; every file written."""
        ...

    def open(self, stem: Path, generation: int) -> Any:
        """The value written at ``stem``."""
        ...


class PickleCodec:
    """A value pickled into one file; each worker unpickles its own copy.

    The store's directory is private to the supervisor and its workers (mode
    0700), so only they write what is unpickled.
    """

    suffix = ".pickle"

    def write(self, value: Any, stem: Path) -> Sequence[Path]:
        path = stem.with_name(stem.name + self.suffix)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            with open(tmp, "wb") as out:
                pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.rename(tmp, path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            tmp.unlink(missing_ok=True)
            raise SnapshotWriteError(f"cannot write snapshot {path}: {exc}") from exc
        return (path,)

    def open(self, stem: Path, generation: int) -> Any:
        path = stem.with_name(stem.name + self.suffix)
        try:
            with open(path, "rb") as source:
                return pickle.load(source)
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise SnapshotFormatError(f"cannot read snapshot {path}: {exc}") from exc
