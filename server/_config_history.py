"""``ConfigHistory``: the configs a server accepted, kept in its state directory.

Each accepted config is kept by revision (the first 12 hex digits of its
SHA-256, as ``GET /config`` names it): its bytes in ``configs/<hash>.json``
and a line in ``history.json`` (revision, content hash, size, when it was
first and last accepted, and what triggered the last acceptance: ``start``,
``watch``, ``poll``, ``signal``, ``admin``, ``supervisor``, ``rollback``, or
``auto_rollback`` with its ``reason``: the supervisor of ``--workers N`` took
the pod back to it because the workers could not build the config after it).
A config accepted again moves to the top; the oldest go once the history
holds more than ``max_count`` revisions or ``max_bytes`` bytes of configs
(never the one serving, never the pinned one). ``history.json`` also keeps
the pinned revision (``rollback``: the watcher and SIGHUP read it instead of
the file until ``unpin``) and the resource pins and rollbacks an admin made,
which a restarted server applies again (with the value each held, when
``server/_kept_values.py`` could keep it).

The hook is narrow: :class:`HistorySource` is the config source of whoever
decides reloads (the one process's ``Reloader``, the supervisor's
``ConfigAuthority``): it hands out the pinned bytes, or the file's, and
remembers what it read; :meth:`ConfigHistory.accepted` is a listener of that
authority's outcomes and keeps the bytes of each ``ok``.

One process writes a state directory (an ``flock`` on ``lock``); another
server started on the same directory keeps its history in memory and says
so. Workers of ``--workers N`` read ``history.json`` and the kept configs,
never write them.

Bounds: ``max_count`` revisions, ``max_bytes`` bytes of kept configs (a
config larger than that is listed, not kept: it cannot be rolled back to);
``history.json`` is read at most :data:`MAX_INDEX_BYTES`; a kept config at
most the server's ``--max-config-bytes``.

Guarantees:
- Every change of the history (an acceptance, a pin, a resource pin) happens
  under ``_lock`` and is written whole (``write_atomically``) before the lock
  is let go, so a reader (a worker) sees one state or the next, never a mix;
  a config's bytes are written before the line that names them.
- ``_read`` (the bytes last handed out, by hash) is written by the source
  under ``_lock`` and read by :meth:`accepted`; both run under the reload
  policy's lock, so the bytes an ``ok`` names are the ones it built.
- A state directory that cannot be written is logged once and the history
  stays in memory: serving never depends on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from pineapple._error_text import capped

from ._atomic_file import write_atomically
from ._build_error import BuildError
from ._reload_policy import ReloadOutcome

__all__ = [
    "DEFAULT_HISTORY_MAX_BYTES",
    "DEFAULT_HISTORY_MAX_COUNT",
    "HISTORY_FILE",
    "MAX_INDEX_BYTES",
    "ConfigHistory",
    "HistoryEntry",
    "HistoryError",
    "HistoryLimits",
    "HistorySource",
    "default_state_dir",
    "read_index",
]

HISTORY_FILE = "history.json"
CONFIGS_DIR = "configs"
DEFAULT_HISTORY_MAX_COUNT = 20
DEFAULT_HISTORY_MAX_BYTES = 256 * 1024 * 1024
MAX_INDEX_BYTES = 4 * 1024 * 1024
"""``history.json`` larger than this is not read (a history of ``max_count`` revisions
and a resource pin per resource is a few KiB)."""
_MAX_RESOURCE_PINS = 10_000

_log = logging.getLogger("pineapple.server")


class HistoryError(Exception):
    """A history request that cannot be answered: ``status`` (HTTP) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class HistoryLimits:
    """``--history-max-count`` and ``--history-max-bytes``."""

    max_count: int = DEFAULT_HISTORY_MAX_COUNT
    max_bytes: int = DEFAULT_HISTORY_MAX_BYTES


@dataclass(frozen=True)
class HistoryEntry:
    """One accepted config (no content: its bytes are in ``configs/``)."""

    revision: str
    content_hash: str
    size: int
    first_accepted_at: float
    accepted_at: float
    trigger: str
    kept: bool
    """Whether its bytes are kept (a config over ``max_bytes`` is listed only)."""
    reason: str | None = None
    """Why it was accepted again, for an ``auto_rollback`` (redacted, capped); else None."""

    @classmethod
    def parse(cls, raw: Any) -> HistoryEntry | None:
        """An entry of ``history.json``; None for one that is not well formed."""
        try:
            entry = cls(**raw)
        except TypeError:
            return None
        digest = entry.content_hash
        ok = (
            isinstance(digest, str)
            and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest)
            and entry.revision == digest[:12]
            and isinstance(entry.size, int)
        )
        return entry if ok else None


def default_state_dir(config_path: Path) -> Path:
    """``$XDG_STATE_HOME/pineapple/<hash of the config's absolute path>`` (``~/.local/state``
    without the variable): one directory per config a host serves."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    key = hashlib.sha256(str(config_path.absolute()).encode()).hexdigest()[:16]
    return Path(base) / "pineapple" / key


def read_index(state_dir: Path) -> dict[str, Any]:
    """``history.json`` of ``state_dir`` (``{}`` when there is none or it is unreadable)."""
    path = state_dir / HISTORY_FILE
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INDEX_BYTES + 1)
    except OSError:
        return {}
    if len(data) > MAX_INDEX_BYTES:
        _log.warning("%s is over %d bytes: not read", path, MAX_INDEX_BYTES)
        return {}
    try:
        index = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        _log.warning("%s is not JSON (%s): the history starts empty", path, exc)
        return {}
    return index if isinstance(index, dict) else {}


def read_kept(state_dir: Path, content_hash: str, max_bytes: int) -> bytes:
    """The kept bytes of ``content_hash``; :class:`HistoryError` when they are not there."""
    path = state_dir / CONFIGS_DIR / f"{content_hash}.json"
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise HistoryError(
            409, f"the config of revision {content_hash[:12]} is not kept: {exc.strerror}"
        ) from None
    if len(data) > max_bytes or hashlib.sha256(data).hexdigest() != content_hash:
        raise HistoryError(409, f"the kept config of revision {content_hash[:12]} is damaged")
    return data


class ConfigHistory:
    """The accepted configs, the pinned revision and the resource pins (see module docs)."""

    def __init__(
        self, state_dir: Path | None, limits: HistoryLimits, max_config_bytes: int
    ) -> None:
        self.limits = limits
        self.max_config_bytes = max_config_bytes
        self._lock = threading.Lock()
        self._entries: list[HistoryEntry] = []
        """Newest first."""
        self._memory: dict[str, bytes] = {}
        """Kept bytes by hash, when there is no writable state directory."""
        self._read: tuple[str, bytes] | None = None
        self.pinned: str | None = None
        """The pinned content hash (a rollback's), or None."""
        self._pending_rollback: str | None = None
        self.resource_pins: dict[str, dict[str, Any]] = {}
        """``name -> {"action": "pin"|"rollback", "version": int|None, "at": float}``."""
        self._lock_fd: int | None = None
        self.state_dir = self._own(state_dir) if state_dir is not None else None
        """Where the history is written (None: in memory only)."""
        if self.state_dir is not None:
            self._load(self.state_dir)

    def close(self) -> None:
        """Let go of the state directory (the process's exit does it too)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    # -- the state directory ------------------------------------------------------------

    def _own(self, state_dir: Path) -> Path | None:
        try:
            (state_dir / CONFIGS_DIR).mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(state_dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            _log.warning(
                "state directory %s cannot be used (%s): config history in memory", state_dir, exc
            )
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            _log.warning(
                "state directory %s is another server's: config history in memory", state_dir
            )
            return None
        self._lock_fd = fd  # held for the life of the process
        return state_dir

    def _load(self, state_dir: Path) -> None:
        index = read_index(state_dir)
        raw = index.get("revisions")
        entries = [HistoryEntry.parse(e) for e in raw] if isinstance(raw, list) else []
        self._entries = [e for e in entries if e is not None][: self.limits.max_count]
        pinned = index.get("pinned")
        known = {e.content_hash for e in self._entries if e.kept}
        self.pinned = pinned if isinstance(pinned, str) and pinned in known else None
        pins = index.get("resources")
        if isinstance(pins, dict):
            self.resource_pins = {
                str(k): v for k, v in list(pins.items())[:_MAX_RESOURCE_PINS] if isinstance(v, dict)
            }
        if self.pinned is not None:
            _log.info(
                "config revision %s is pinned (state directory %s)", self.pinned[:12], state_dir
            )

    def _write_index(self) -> None:
        """Write ``history.json`` (caller holds ``_lock``)."""
        if self.state_dir is None:
            return
        body = {
            "pinned": self.pinned,
            "revisions": [asdict(e) for e in self._entries],
            "resources": self.resource_pins,
        }
        try:
            write_atomically(self.state_dir / HISTORY_FILE, orjson.dumps(body), durable=True)
        except OSError as exc:
            _log.warning("cannot write the config history: %s", exc)

    def _keep(self, digest: str, data: bytes) -> bool:
        """Keep ``data``'s bytes (caller holds ``_lock``); whether they are kept."""
        if len(data) > self.limits.max_bytes:
            return False
        if self.state_dir is None:
            self._memory[digest] = data
            return True
        try:
            write_atomically(self.state_dir / CONFIGS_DIR / f"{digest}.json", data, durable=True)
        except OSError as exc:
            _log.warning("cannot keep config revision %s: %s", digest[:12], exc)
            return False
        return True

    def _drop(self, entry: HistoryEntry) -> None:
        self._memory.pop(entry.content_hash, None)
        if self.state_dir is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / CONFIGS_DIR / f"{entry.content_hash}.json").unlink()

    # -- the hook -----------------------------------------------------------------------

    def source(self, read: Callable[[int], bytes]) -> HistorySource:
        """The config source of the authority that decides reloads (see module docs)."""
        return HistorySource(self, read)

    def noted(self, data: bytes) -> bytes:
        """Remember ``data`` as the bytes last handed out; returns it."""
        with self._lock:
            self._read = (hashlib.sha256(data).hexdigest(), data)
        return data

    def accepted(self, outcome: ReloadOutcome) -> None:
        """A listener of the reload authority: keep the config an ``ok`` outcome accepted."""
        if outcome.result != "ok" or outcome.content_hash is None:
            return
        with self._lock:
            read = self._read
            if read is None or read[0] != outcome.content_hash:
                return  # not bytes this source handed out (cannot happen under the policy)
            trigger = "rollback" if self._pending_rollback == read[0] else outcome.trigger
            self._pending_rollback = None
            self._add(read[0], read[1], trigger, outcome.at)
            self._write_index()

    def auto_rolled_back(self, data: bytes, failed: str, reason: str, at: float) -> None:
        """The supervisor took the pod back to ``data`` because its workers could not build
        ``failed`` (a content hash): ``data`` is current again, trigger ``auto_rollback``.

        A pin of ``failed`` goes: the pinned bytes cannot serve, and the history must
        name what serves.
        """
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if self.pinned == failed:
                self.pinned = None
                _log.warning(
                    "config revision %s was pinned and the workers cannot build it: unpinned",
                    failed[:12],
                )
            self._pending_rollback = None
            self._add(digest, data, "auto_rollback", at, capped(reason))
            self._write_index()

    def _add(
        self, digest: str, data: bytes, trigger: str, at: float, reason: str | None = None
    ) -> None:
        old = next((e for e in self._entries if e.content_hash == digest), None)
        if old is not None:
            self._entries.remove(old)
            kept = old.kept or self._keep(digest, data)
            entry = replace(old, accepted_at=at, trigger=trigger, kept=kept, reason=reason)
        else:
            kept = self._keep(digest, data)
            entry = HistoryEntry(digest[:12], digest, len(data), at, at, trigger, kept, reason)
        self._entries.insert(0, entry)
        self._bound()

    def _bound(self) -> None:
        """Drop the oldest revisions past the limits (never the newest, nor the pinned)."""
        # Bounded: each pass drops one entry of a list of at most max_count + 1.
        while True:
            kept_bytes = sum(e.size for e in self._entries if e.kept)
            over = len(self._entries) > self.limits.max_count or kept_bytes > self.limits.max_bytes
            droppable = [e for e in self._entries[1:] if e.content_hash != self.pinned]
            if not over or not droppable:
                return
            victim = droppable[-1]
            self._entries.remove(victim)
            self._drop(victim)

    # -- reads ----------------------------------------------------------------------------

    def entries(self) -> list[HistoryEntry]:
        """The revisions, newest first."""
        with self._lock:
            return list(self._entries)

    def resolve(self, revision: str) -> HistoryEntry:
        """The entry a revision (or a unique prefix of at least 4 hex digits) names."""
        return resolve(self.entries(), revision)

    def bytes_of(self, entry: HistoryEntry) -> bytes:
        """The kept bytes of ``entry``; :class:`HistoryError` (409) when not kept."""
        if not entry.kept:
            raise HistoryError(
                409,
                f"revision {entry.revision} ({entry.size} bytes) is over --history-max-bytes: "
                "listed, not kept",
            )
        if self.state_dir is None:
            with self._lock:
                data = self._memory.get(entry.content_hash)
            if data is None:
                raise HistoryError(409, f"the config of revision {entry.revision} is not kept")
            return data
        return read_kept(self.state_dir, entry.content_hash, self.max_config_bytes)

    def describe(self) -> dict[str, Any]:
        """``GET /config/history``'s body (the serving revision is the caller's to add)."""
        with self._lock:
            entries = [asdict(e) for e in self._entries]
            pinned = self.pinned
            pins = dict(self.resource_pins)
        return {
            "state_dir": str(self.state_dir) if self.state_dir is not None else None,
            "limits": asdict(self.limits),
            "pinned": pinned[:12] if pinned is not None else None,
            "revisions": entries,
            "resources": pins,
        }

    # -- pins -----------------------------------------------------------------------------

    def pin(self, entry: HistoryEntry) -> str | None:
        """Pin ``entry`` as a rollback (its bytes must be kept); the previous pin."""
        self.bytes_of(entry)  # refused (409) when they are not there
        with self._lock:
            previous, self.pinned = self.pinned, entry.content_hash
            self._pending_rollback = entry.content_hash
            self._write_index()
        return previous

    def unpin(self, restore: str | None = None) -> str | None:
        """Unpin (or pin ``restore`` again: a rollback that failed); the previous pin."""
        with self._lock:
            previous, self.pinned = self.pinned, restore
            self._pending_rollback = None
            self._write_index()
        return previous

    def pinned_bytes(self, max_bytes: int) -> bytes | None:
        """The pinned config's bytes, or None when nothing is pinned."""
        with self._lock:
            pinned = self.pinned
            entry = next((e for e in self._entries if e.content_hash == pinned), None)
        if pinned is None:
            return None
        if entry is None:
            raise BuildError("read", f"pinned config revision {pinned[:12]} is not kept")
        try:
            data = self.bytes_of(entry)
        except HistoryError as exc:
            raise BuildError("read", str(exc)) from None
        if len(data) > max_bytes:
            raise BuildError(
                "read", f"pinned config revision {entry.revision} is over {max_bytes} bytes"
            )
        return data

    def note_resource(
        self,
        name: str,
        action: str,
        version: int | None,
        value: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Remember an admin's pin or rollback of ``name`` (``unpin`` forgets it), with the
        record of its kept ``value`` (``server/_kept_values.py``); the value record it
        replaced or forgot (its files are the caller's to remove)."""
        with self._lock:
            old = self.resource_pins.get(name)
            if action == "unpin":
                self.resource_pins.pop(name, None)
            elif name in self.resource_pins or len(self.resource_pins) < _MAX_RESOURCE_PINS:
                pin: dict[str, Any] = {"action": action, "version": version, "at": time.time()}
                if value is not None:
                    pin["value"] = value
                self.resource_pins[name] = pin
            else:
                old = {"value": value}  # not remembered: its value goes at once
            self._write_index()
        replaced = old.get("value") if isinstance(old, dict) else None
        return replaced if isinstance(replaced, dict) else None


def resolve(entries: list[HistoryEntry], revision: str) -> HistoryEntry:
    """The entry of ``entries`` that ``revision`` (a unique prefix of at least 4 hex digits
    of its content hash) names; :class:`HistoryError` 400/404 otherwise."""
    wanted = revision.strip().lower()
    if not (4 <= len(wanted) <= 64) or any(c not in "0123456789abcdef" for c in wanted):
        raise HistoryError(400, "a revision is 4 to 64 hex digits (GET /config/history)")
    found = [e for e in entries if e.content_hash.startswith(wanted)]
    if not found:
        raise HistoryError(404, f"no config revision {wanted} in the history")
    if len(found) > 1:
        raise HistoryError(400, f"revision {wanted} is ambiguous: give more digits")
    return found[0]


class HistorySource:
    """The reload authority's config source: the pinned revision's bytes when one is
    pinned, else ``read``'s (the file's); each read remembered by the history."""

    def __init__(self, history: ConfigHistory, read: Callable[[int], bytes]) -> None:
        self._history = history
        self._read = read

    def read(self, max_bytes: int) -> bytes:
        """The bytes to build (see class docs); ``BuildError``/``ConfigFileError`` at ``read``."""
        pinned = self._history.pinned_bytes(max_bytes)
        data = pinned if pinned is not None else self._read(max_bytes)
        return self._history.noted(data)
