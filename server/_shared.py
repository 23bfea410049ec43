"""Shared snapshots of data resources: the store, and the fetchers on both of its sides.

With ``--workers N`` the supervisor fetches every data resource (the types in
``resources.SHARED_TYPES``) and publishes each new value into a
:class:`SharedStore`, a private directory (under ``/dev/shm`` by default)
holding immutable snapshot files and one small ``manifest.json``. Workers
never talk to the data sources: their fetcher for a shared type is a
:class:`MappedFetcher`, which opens the newest published generation, or
answers ``NOT_MODIFIED`` when it already serves it.

An entry is identified by its *key*: a hash of its type and validated params,
so the supervisor and a worker that read the same config agree on it without
passing names around, and no secret from the params appears in a file name.

Guarantees:
- Publishing writes the snapshot files under new names first, then replaces
  ``manifest.json`` with one ``rename`` (atomic): a reader sees the old or the
  new manifest, never a mix, and every file a manifest names is complete.
- Only the supervisor writes (one publish at a time, under ``_lock``); workers
  only read. A generation's files are unlinked once a newer generation of the
  same key is in the manifest; a worker still mapping them keeps its pages
  until it unmaps them (the kernel frees them after the last unmap).
- An entry that the newest config generation no longer names (a reload
  dropped or renamed its resource, or a failed reload fetched it) is removed,
  manifest entry then files, once no worker may still build a generation that
  named it (``_config_leases``: every worker has read a newer config). Until
  then a worker building such a generation finds its files; after, no worker
  opens them (a draining snapshot keeps its own mapping, and its fetcher
  answers ``NOT_MODIFIED`` for an entry that left the manifest). The
  supervisor calls :meth:`SharedStore.sweep` every half second.
- A failed publish (``SnapshotWriteError``, e.g. ``/dev/shm`` full) leaves the
  manifest and the last good snapshot as they were, and the fetch fails: the
  supervisor's Manager keeps its last good value and retries with backoff.
- Besides one entry per shared resource, the manifest holds entries whose keys
  start with ``_`` (an entry key starts with a type name): ``_config`` (the
  config bytes the supervisor accepted, its generation and hash), ``_pins``
  (``name -> reason`` of every pinned shared resource) and ``_reload`` (the
  supervisor's last reload outcome). They are amended under the same ``_lock``
  and written with the same atomic rename, so a worker sees a config
  generation only after every snapshot it names was published.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow

import resources
from pineapple import PineappleError
from pineapple._heap_trim import trim_heap
from pineapple.resource import NOT_MODIFIED, Fetcher, FetcherFactory, Registry

from ._build import ConfigFileError, read_config_file
from ._config_leases import HeldGenerations, take_lease
from ._staging import Staging
from ._stale_dirs import STORE_PREFIX, mark_owner, remove_stale_dirs

__all__ = [
    "CONFIG_ENTRY",
    "MANIFEST_MAX_BYTES",
    "PINS_ENTRY",
    "RELOAD_ENTRY",
    "MappedFetcher",
    "Published",
    "PublishingFetcher",
    "SharedStore",
    "SnapshotMissingError",
    "default_shared_parent",
    "entry_key",
    "mapped_registry",
    "publishing_registry",
]

MANIFEST_MAX_BYTES = 1024 * 1024
"""A manifest larger than this is refused (it lists one line per shared resource)."""

CONFIG_ENTRY = "_config"
"""Manifest entry: ``{"generation", "file", "content_hash"}`` of the accepted config."""
PINS_ENTRY = "_pins"
"""Manifest entry: ``{name: reason}`` of the shared resources the supervisor holds pinned."""
RELOAD_ENTRY = "_reload"
"""Manifest entry: the supervisor's last config reload outcome (``ReloadOutcome.to_dict``)."""
_CONFIG_READ_ATTEMPTS = 3
"""A worker reading the config retries this often when a newer publish unlinked its file."""

_log = logging.getLogger("pineapple.server")


class SnapshotMissingError(PineappleError):
    """A worker asked for a shared resource the supervisor has not published."""


def entry_key(type_name: str, params: Any) -> str:
    """The key of a config entry in the store: a hash of its type and params."""
    text = orjson.dumps({"type": type_name, "params": params}, option=orjson.OPT_SORT_KEYS)
    return f"{type_name}-{hashlib.sha256(text).hexdigest()[:24]}"


def default_shared_parent() -> Path:
    """``/dev/shm`` when it exists (memory-backed on Linux), else the temporary directory."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


@dataclass(frozen=True)
class Published:
    """The supervisor's value of a shared resource: what it last published."""

    key: str
    generation: int
    kind: str
    summary: str

    def __str__(self) -> str:
        return f"generation {self.generation} ({self.summary})"


class SharedStore:
    """A directory of published snapshots and its manifest (see the module's Guarantees).

    >>> store = SharedStore.create()     # doctest: +SKIP  (the supervisor)
    >>> SharedStore(store.path)          # doctest: +SKIP  (a worker)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest_path = self.path / "manifest.json"
        self._lock = threading.Lock()
        self._held = HeldGenerations()
        """Supervisor: the config generations a worker may still build from."""
        self._config_generation = 0
        """Supervisor: the config generation last published."""
        self._dropped: dict[str, int] = {}
        """Supervisor: ``key -> newest config generation that may name it`` of unnamed entries."""
        self._lease: tuple[int, int] | None = None
        """Worker: ``(generation, descriptor)`` of the config generation it last read."""
        self._owner: int | None = None
        """Supervisor: the locked descriptor of the ``owner`` file (``_stale_dirs``)."""
        self._staged = 0
        """Supervisor: how many values were held back (names their files uniquely)."""

    @classmethod
    def create(cls, parent: str | Path | None = None) -> SharedStore:
        """A new private directory (mode 0700) under ``parent`` (default: ``/dev/shm``).

        First removes the directories that supervisors which died without
        cleaning up (SIGKILL, OOM) left under ``parent`` (see ``_stale_dirs``);
        this process holds the new one's ``owner`` lock until :meth:`remove`.
        """
        base = Path(parent) if parent is not None else default_shared_parent()
        remove_stale_dirs(base, STORE_PREFIX)
        path = Path(tempfile.mkdtemp(prefix=STORE_PREFIX, dir=base))
        try:
            owner = mark_owner(path)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            raise
        store = cls(path)
        store._owner = owner
        return store

    def manifest(self) -> dict[str, dict[str, Any]]:
        """``key -> {"generation", "kind", "stem"}`` as last published ({} before any)."""
        try:
            with open(self.manifest_path, "rb") as source:
                data = source.read(MANIFEST_MAX_BYTES + 1)
        except FileNotFoundError:
            return {}
        if len(data) > MANIFEST_MAX_BYTES:
            raise SnapshotMissingError(
                f"{self.manifest_path}: over {MANIFEST_MAX_BYTES} bytes, not a manifest we wrote"
            )
        parsed = orjson.loads(data)
        if not isinstance(parsed, dict):
            raise SnapshotMissingError(f"{self.manifest_path}: not a manifest")
        return parsed

    def publish(
        self, key: str, type_name: str, value: Any, staging: Staging | None = None
    ) -> Published:
        """Write ``value`` as the next generation of ``key`` and name it in the manifest.

        With a ``staging`` that is still staging and a ``key`` the manifest
        names, the files are written but named only when the config is
        accepted (``server/_staging.py``).
        """
        with self._lock:
            if staging is not None and staging.state == "refused":
                raise resources.SnapshotWriteError(f"{key}: not published, its config was refused")
            manifest = self.manifest()
            old = manifest.get(key)
            generation = (old["generation"] if old else 0) + 1
            if staging is not None and staging.state == "staging" and old is not None:
                self._staged += 1
                stem = self.path / f"{key}.staged-{self._staged}"
                kind = resources.write_snapshot(type_name, value, stem)
                replaced = staging.entries.get(key)
                staging.entries[key] = {"generation": generation, "kind": kind, "stem": stem.name}
                if replaced is not None:  # fetched again before its config was decided
                    self._unlink(replaced)
                return Published(key, generation, kind, _summary(value))
            stem = self.path / f"{key}.{generation}"
            kind = resources.write_snapshot(type_name, value, stem)
            manifest[key] = {"generation": generation, "kind": kind, "stem": stem.name}
            try:
                self._write_manifest(manifest)
            except OSError as exc:
                for path in resources.snapshot_files(kind, stem):
                    path.unlink(missing_ok=True)
                raise resources.SnapshotWriteError(
                    f"cannot write {self.manifest_path}: {exc}"
                ) from exc
            if old is not None:
                self._unlink(old)
        return Published(key, generation, kind, _summary(value))

    def refuse(self, staging: Staging) -> None:
        """Refuse ``staging``: delete what it held back (a no-op once it was accepted)."""
        with self._lock:
            if staging.state != "staging":
                return
            staging.state = "refused"
            for entry in staging.entries.values():
                self._unlink(entry)
            staging.entries.clear()

    def _unlink(self, entry: dict[str, Any]) -> None:
        for path in resources.snapshot_files(entry["kind"], self.path / entry["stem"]):
            path.unlink(missing_ok=True)

    def amend(self, entry: str, value: dict[str, Any]) -> None:
        """Set the reserved manifest ``entry`` (``_pins``, ``_reload``) to ``value``."""
        with self._lock:
            manifest = self.manifest()
            manifest[entry] = value
            self._write(manifest)

    def publish_config(self, data: bytes, content_hash: str, staging: Staging | None = None) -> int:
        """Publish the accepted config bytes as the next config generation; the generation.

        What ``staging`` held back is named in the same manifest write (a worker
        sees the config and its values together); its keys' older files go.
        """
        with self._lock:
            manifest = self.manifest()
            superseded = []
            for key, entry in (staging.entries if staging is not None else {}).items():
                current = manifest.get(key)
                if current is not None:
                    # A refresh of the serving config may have published meanwhile.
                    entry["generation"] = max(entry["generation"], current["generation"] + 1)
                    superseded.append(current)
                manifest[key] = entry
            old = manifest.get(CONFIG_ENTRY)
            generation = (int(old["generation"]) if old else 0) + 1
            name = f"config-{generation}.json"
            try:
                with open(self.path / name, "wb") as out:
                    out.write(data)
                self._held.hold(generation, self.path / name)
            except OSError as exc:
                (self.path / name).unlink(missing_ok=True)
                raise resources.SnapshotWriteError(
                    f"cannot write {self.path / name}: {exc}"
                ) from exc
            manifest[CONFIG_ENTRY] = {
                "generation": generation,
                "file": name,
                "content_hash": content_hash,
            }
            try:
                self._write(manifest)
            except resources.SnapshotWriteError:
                self._held.forget(generation)
                (self.path / name).unlink(missing_ok=True)
                raise
            if old is not None:
                (self.path / str(old["file"])).unlink(missing_ok=True)
            for entry in superseded:
                self._unlink(entry)
            if staging is not None:
                staging.state, staging.entries = "accepted", {}
            self._config_generation = generation
        return generation

    def retire(self, named: set[str]) -> None:
        """Entries the newest config generation does not name go once no worker needs them.

        ``named``: the keys of every shared entry of the config generation last
        published (the supervisor calls this after a reload, successful or not).
        """
        with self._lock:
            unnamed = {k for k in self.manifest() if not k.startswith("_") and k not in named}
            newest_naming = self._config_generation - 1  # a later one may name them again
            self._dropped = {k: self._dropped.get(k, newest_naming) for k in unnamed}

    def sweep(self) -> list[str]:
        """Remove the retired entries no worker may still open (see Guarantees); their keys."""
        with self._lock:
            oldest = self._held.oldest(self._config_generation)
            gone = sorted(k for k, newest in self._dropped.items() if newest < oldest)
            if not gone:
                return []
            manifest = self.manifest()
            entries = [manifest.pop(k) for k in gone if k in manifest]
            self._write(manifest)  # SnapshotWriteError: nothing removed, the next sweep retries
            for key in gone:
                del self._dropped[key]
            for entry in entries:
                for path in resources.snapshot_files(entry["kind"], self.path / entry["stem"]):
                    path.unlink(missing_ok=True)
        _log.info("removed %d shared snapshot(s) no config names any more", len(gone))
        return gone

    def read_config(self, max_bytes: int) -> tuple[int, bytes]:
        """``(generation, bytes)`` of the newest accepted config; ``ConfigFileError`` if none."""
        # Bounded: _CONFIG_READ_ATTEMPTS tries; each loses only to a newer publish.
        for _ in range(_CONFIG_READ_ATTEMPTS):
            entry = self.manifest().get(CONFIG_ENTRY)
            if entry is None:
                break
            generation, path = int(entry["generation"]), self.path / str(entry["file"])
            try:
                lease = take_lease(path)  # held until this worker reads a newer generation
                try:
                    data = read_config_file(path, max_bytes)
                except BaseException:
                    os.close(lease)
                    raise
            except ConfigFileError:
                if self.manifest().get(CONFIG_ENTRY) == entry:
                    raise  # not replaced meanwhile: a real failure
                continue
            self._keep_lease(generation, lease)
            return generation, data
        raise ConfigFileError(self.path, "holds no config accepted by the supervisor")

    def _keep_lease(self, generation: int, fd: int) -> None:
        """Hold the lease on ``generation`` and release the one this worker held before."""
        with self._lock:
            old, self._lease = self._lease, (generation, fd)
        if old is not None:
            os.close(old[1])

    def _write(self, manifest: dict[str, Any]) -> None:
        try:
            self._write_manifest(manifest)
        except OSError as exc:
            raise resources.SnapshotWriteError(f"cannot write {self.manifest_path}: {exc}") from exc

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        tmp = self.manifest_path.with_name(".manifest.json.tmp")
        try:
            with open(tmp, "wb") as out:
                out.write(orjson.dumps(manifest))
            os.rename(tmp, self.manifest_path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def open(self, key: str) -> tuple[int, Any]:
        """``(generation, value)`` of the newest snapshot of ``key``."""
        entry = self.manifest().get(key)
        if entry is None:
            raise SnapshotMissingError(
                f"no shared snapshot of {key} in {self.path} (has the supervisor loaded it?)"
            )
        generation = int(entry["generation"])
        value = resources.open_snapshot(entry["kind"], self.path / entry["stem"], generation)
        return generation, value

    def generation(self, key: str) -> int:
        """The newest published generation of ``key`` (0: none)."""
        entry = self.manifest().get(key)
        return 0 if entry is None else int(entry["generation"])

    def remove(self) -> None:
        """Delete the directory and every snapshot in it (the supervisor, at exit)."""
        with self._lock:
            self._held.close()
        shutil.rmtree(self.path, ignore_errors=True)
        if self._owner is not None:  # only now: a sweep must never see it unowned
            os.close(self._owner)
            self._owner = None


def _release_freed_memory() -> None:
    """Hand the memory of a table just published and dropped back to the OS.

    Arrow's pool and glibc keep freed pages for reuse, so without this the
    supervisor's RSS stays at its peak between refreshes. Never fails a publish.
    """
    try:
        pyarrow.default_memory_pool().release_unused()
        trim_heap()
    except Exception as exc:  # a missing symbol or an old pyarrow: only memory is lost
        _log.debug("cannot release freed memory after a publish: %s", exc)


def _summary(value: Any) -> str:
    if isinstance(value, resources.FeedTable):
        return f"{len(value)} rows"
    try:
        return f"{len(value)} entries"
    except TypeError:
        return type(value).__name__


class PublishingFetcher:
    """Supervisor side: fetch with the type's own fetcher, publish, drop the value.

    The supervisor keeps only a :class:`Published` record: the table lives in
    the shared files, not in the supervisor's heap.
    """

    def __init__(
        self,
        inner: Fetcher,
        store: SharedStore,
        key: str,
        type_name: str,
        staging: Staging | None = None,
    ) -> None:
        self._inner = inner
        self._store = store
        self.key = key
        self.type_name = type_name
        self._staging = staging

    def __call__(self) -> Any:
        value = self._inner()
        if value is NOT_MODIFIED:
            return NOT_MODIFIED
        try:
            return self._store.publish(self.key, self.type_name, value, self._staging)
        finally:
            close = getattr(value, "close", None)
            if callable(close):
                close()
            del value
            _release_freed_memory()

    def close(self) -> None:
        """Close the inner fetcher (its database connection)."""
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()

    def cancel(self) -> None:
        """Stop a load in flight (forwarded to the inner fetcher)."""
        cancel = getattr(self._inner, "cancel", None)
        if callable(cancel):
            cancel()


class MappedFetcher:
    """Worker side: the newest published snapshot of ``key``, opened (never a source read)."""

    def __init__(self, store: SharedStore, key: str) -> None:
        self._store = store
        self.key = key
        self.generation = 0

    def __call__(self) -> Any:
        if self.generation and self._store.generation(self.key) in (self.generation, 0):
            return NOT_MODIFIED  # unchanged, or no config names it any more (this one drains)
        generation, value = self._store.open(self.key)
        self.generation = generation
        return value


def _wrapped(base: Registry, wrap: Callable[[FetcherFactory, str], FetcherFactory]) -> Registry:
    registry = Registry()
    for schema in base.all():
        factory = base.factory(schema.name)
        assert factory is not None
        if schema.name in resources.SHARED_TYPES:
            factory = wrap(factory, schema.name)
        registry.register(schema, factory)
    return registry


class _Unshared:
    """Supervisor side of a per-worker type: validated there, never fetched."""

    def __call__(self) -> None:
        return None


def publishing_registry(
    base: Registry,
    store: SharedStore,
    named: set[str] | None = None,
    staging: Staging | None = None,
) -> Registry:
    """``base`` with shared types publishing into ``store`` and the rest not fetched.

    The key of every shared entry whose fetcher is made is added to ``named``;
    its fetcher publishes through ``staging`` (a candidate config's).
    """

    def wrap(factory: FetcherFactory, type_name: str) -> FetcherFactory:
        def make(params: dict[str, Any]) -> Fetcher:
            key = entry_key(type_name, params)
            fetcher = PublishingFetcher(factory(params), store, key, type_name, staging)
            if named is not None:
                named.add(key)
            return fetcher

        return make

    def unshared(factory: FetcherFactory) -> FetcherFactory:
        def make(params: dict[str, Any]) -> Fetcher:
            factory(params)  # the type's own checks of its params (no I/O)
            return _Unshared()

        return make

    registry = Registry()
    for schema in base.all():
        factory = base.factory(schema.name)
        assert factory is not None
        if schema.name in resources.SHARED_TYPES:
            registry.register(schema, wrap(factory, schema.name))
        else:
            registry.register(schema, unshared(factory))
    return registry


def mapped_registry(base: Registry, store: SharedStore) -> Registry:
    """``base`` with every shared type read from ``store`` instead of its source."""

    def wrap(factory: FetcherFactory, type_name: str) -> FetcherFactory:
        def make(params: dict[str, Any]) -> Fetcher:
            factory(params)  # the type's own checks of its params (no I/O)
            return MappedFetcher(store, entry_key(type_name, params))

        return make

    return _wrapped(base, wrap)
