"""``KeptValues``: the value of a pinned or rolled-back resource, kept across a restart.

An admin's ``pin`` or ``rollback`` of a resource is kept in the config history
(``server/_config_history.py``); this module keeps the value it held, so a
restarted server serves that value again rather than what its start read.

- A resource whose type declares a codec (the types shared with the workers of
  ``--workers N``: ``ResourceSchema.codec``) is written with that codec under
  ``values/`` of the state directory, and the record of its pin names the
  files (``kept``, ``bytes``, the entry's ``fingerprint``). At start the
  server opens them and serves the value pinned (``Manager.restore``) when the
  config still declares the entry unchanged (the same fingerprint): its
  ``Pinned`` condition says the value came from the state directory.
- A value over ``max_bytes`` (``--history-max-value-bytes``), a type without a
  codec, a server without a writable state directory, a codec that failed or
  an entry that changed: the pin is kept, the value is not (``kept: false``
  and ``why``), and the restarted server pins the value its start read, and
  says so in the ``Pinned`` condition.

Bounds: a value is written at most ``max_bytes`` (a size its type's printer
reports over the limit is not written; files written past it are removed);
opened at start by its codec (the files were written by this server, in a
directory only it writes: mode 0700). The sweep at start removes at most
:data:`_MAX_SWEPT` files no record names (a crash between writing a value
and its record).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from pineapple import PineappleError, resource
from pineapple._error_text import capped

__all__ = ["DEFAULT_KEPT_VALUE_MAX_BYTES", "VALUES_DIR", "KeptValues"]

VALUES_DIR = "values"
DEFAULT_KEPT_VALUE_MAX_BYTES = 64 * 1024 * 1024
_MAX_SWEPT = 10_000

_log = logging.getLogger("pineapple.server")


class KeptValues:
    """Values of pinned resources in ``state_dir``/``values`` (see module docs).

    ``state_dir`` None: nothing is kept (a history in memory). ``types``: the
    registry whose schemas name each type's codec.
    """

    def __init__(self, state_dir: Path | None, max_bytes: int, types: resource.Registry) -> None:
        self.max_bytes = max_bytes
        self._types = types
        self.folder = state_dir / VALUES_DIR if state_dir is not None else None

    def _codec(self, type_name: str) -> Any:
        schema = self._types.get(type_name) if type_name else None
        return None if schema is None else schema.codec

    def keep(self, manager: resource.Manager, name: str) -> dict[str, Any]:
        """Write the value ``name`` serves in ``manager``; the record of it (``kept``: True
        with its files, or False with ``why``). Never raises: a value not kept keeps its pin."""
        entry = manager.entries().get(name)
        status = manager.status_of(name)
        codec = self._codec(status.type)
        why = None
        if self.folder is None:
            why = "the history has no state directory"
        elif entry is None:
            why = "it is not declared by the config"
        elif codec is None:
            why = f"its type {status.type!r} has no codec"
        elif status.size_bytes is not None and status.size_bytes > self.max_bytes:
            why = self._over(status.size_bytes)
        if why is not None:
            return _not_kept(why)
        assert entry is not None and self.folder is not None
        handle = manager.get(name)
        if handle is None:
            return _not_kept("it serves no value")
        stem = self.folder / f"{hashlib.sha256(name.encode()).hexdigest()[:16]}-{time.time_ns()}"
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            with handle as value:
                files = [Path(f) for f in codec.write(value, stem)]
        except (OSError, PineappleError) as exc:
            return _not_kept(f"its snapshot could not be written: {exc}")
        size = sum(_size(f) for f in files)
        if size > self.max_bytes:
            _unlink(files)
            return _not_kept(self._over(size))
        return {
            "kept": True,
            "stem": stem.name,
            "files": [f.name for f in files],
            "bytes": size,
            "type": status.type,
            "fingerprint": entry.fingerprint(),
        }

    def _over(self, size: int) -> str:
        return f"its value ({size} bytes) is over --history-max-value-bytes ({self.max_bytes})"

    def restore(
        self, manager: resource.Manager, name: str, record: dict[str, Any], reason: str
    ) -> str | None:
        """Serve the value ``record`` kept for ``name``, pinned with ``reason``; None when it
        serves, else why it cannot (the caller pins the value its start read)."""
        why = record.get("why")
        if record.get("kept") is not True:
            return str(why) if isinstance(why, str) else "its value was not kept"
        entry = manager.entries().get(name)
        codec = self._codec(str(record.get("type", "")))
        stem = record.get("stem")
        if entry is None or entry.fingerprint() != record.get("fingerprint"):
            return "its config entry changed since"
        if codec is None or self.folder is None or not isinstance(stem, str) or "/" in stem:
            return "its kept value cannot be read here"
        try:
            value = codec.open(self.folder / stem, 0)
        except (OSError, PineappleError) as exc:
            return capped(f"its kept value cannot be opened: {exc}")
        try:
            manager.restore(name, value, reason)
        except PineappleError as exc:
            return capped(f"its kept value cannot serve: {exc}")
        return None

    def drop(self, record: dict[str, Any] | None) -> None:
        """Remove the files ``record`` names (a pin replaced or let go)."""
        if self.folder is None or not isinstance(record, dict):
            return
        names = record.get("files")
        if isinstance(names, list):
            _unlink([self.folder / n for n in names if isinstance(n, str) and "/" not in n])

    def sweep(self, records: list[dict[str, Any]]) -> None:
        """Remove the files of ``values/`` that no record names (a crash between a write and
        its record); at most :data:`_MAX_SWEPT` entries are looked at."""
        if self.folder is None:
            return
        named = {n for r in records if isinstance(r.get("files"), list) for n in r["files"]}
        try:
            with os.scandir(self.folder) as found:
                for count, item in enumerate(found):
                    if count >= _MAX_SWEPT:
                        break
                    if item.name not in named:
                        _unlink([Path(item.path)])
        except OSError:
            return  # no folder yet: nothing to sweep


def _not_kept(why: str) -> dict[str, Any]:
    return {"kept": False, "why": why}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _unlink(paths: list[Path]) -> None:
    for path in paths:  # bounded: the files of one value
        with contextlib.suppress(OSError):
            path.unlink()
