"""The publishing side of the shared-snapshot store (the supervisor).

The store's layout, which both sides read, is ``server/workers/_store_format.py``;
the side that maps what is published is ``server/workers/worker/_mapping.py``.
Here: :class:`SharedStore` (every write to the directory), and
:class:`PublishingFetcher`, which fetches a shared type with its own fetcher and
publishes each value with the type's codec; :func:`publishing_registry` makes one
per shared entry of a config. :class:`SnapshotPublisher` is the seam between
the two: what a ``PublishingFetcher`` asks of a store.

Guarantees:
- Publishing writes the snapshot files under new names first, then replaces
  ``manifest.json`` with one ``rename`` (atomic): a reader sees the old or the
  new manifest, never a mix, and every file a manifest names is complete.
- Only the supervisor writes (one publish at a time, under ``_lock``); workers
  only read. A value is first *staged* (its files written, the manifest
  unchanged) and *committed* (named in the manifest) only once the
  supervisor's Manager accepted it (validators, budget, pin:
  :class:`PublishingFetcher`); a refused one is discarded, so a worker never
  opens a value the supervisor does not serve. A generation's files are
  unlinked once a newer generation of the same key is in the manifest; a
  worker still mapping them keeps its pages until it unmaps them (the kernel
  frees them after the last unmap).
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
- The reserved entries (``_config``: the config bytes the supervisor accepted,
  its generation and hash; ``_reload``: its last reload outcome) are amended
  under the same ``_lock`` and written with the same atomic rename, so a
  worker sees a config generation only after every snapshot it names was
  published.
- A manifest that would be over ``MANIFEST_MAX_BYTES`` (which every reader
  refuses) is never written: the write fails as on a full directory, so no
  config can wedge the pod.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from pineapple._heap_trim import trim_heap
from pineapple.resource import NOT_MODIFIED, Fetcher, Registry
from pineapple.resource.lowlevel import (
    SnapshotCodec,
    SnapshotWriteError,
    SourceReport,
    admitted_upstream,
    call_hook,
    hook_of,
    source_report_of,
)

from ..._atomic_file import write_atomically
from .._config_leases import HeldGenerations
from .._store_format import (
    CONFIG_ENTRY,
    MANIFEST_MAX_BYTES,
    KeyedFactory,
    StoreDirectory,
    default_shared_parent,
)
from ._staging import Staging
from ._stale_dirs import STORE_PREFIX, mark_owner, remove_stale_dirs

__all__ = [
    "PublishingFetcher",
    "SharedStore",
    "SnapshotPublisher",
    "Staged",
    "publishing_registry",
]

_log = logging.getLogger("pineapple.server")


@dataclass(frozen=True)
class Staged:
    """A generation of one entry written to the store (named in the manifest once committed)."""

    key: str
    generation: int
    stem: str
    files: tuple[str, ...]
    """The names of the files its codec wrote (inside the store's directory)."""


class SnapshotPublisher(Protocol):
    """What a :class:`PublishingFetcher` asks of a store (``SharedStore`` is one).

    Two phases: :meth:`stage` writes a value where no reader looks yet,
    :meth:`commit` names it (or :meth:`discard` removes it); :meth:`publish`
    is both at once (a rollback's value, written again).
    """

    def stage(self, key: str, codec: SnapshotCodec, value: Any) -> Staged:
        """Write ``value`` as the next generation of ``key``, not yet published."""
        ...

    def open_staged(self, staged: Staged, codec: SnapshotCodec) -> Any:
        """The value of ``staged``, opened as a reader opens a published one."""
        ...

    def commit(self, staged: Staged, staging: Staging | None = None) -> None:
        """Publish ``staged`` (``SnapshotWriteError``: nothing published)."""
        ...

    def discard(self, staged: Staged) -> None:
        """Remove ``staged``, which was never committed."""
        ...

    def publish(self, key: str, codec: SnapshotCodec, value: Any) -> Staged:
        """Stage and commit ``value`` as the next generation of ``key``."""
        ...


class SharedStore(StoreDirectory):
    """The supervisor's store: every write to the directory (see the module's Guarantees).

    A :class:`SnapshotPublisher`. A worker opens the same directory as a
    ``MappedStore`` (``server/workers/worker/_mapping.py``).

    >>> store = SharedStore.create()     # doctest: +SKIP
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._lock = threading.Lock()
        self._held = HeldGenerations()
        """the config generations a worker may still build from."""
        self._config_generation = 0
        """the config generation last published."""
        self._dropped: dict[str, int] = {}
        """``key -> newest config generation that may name it`` of unnamed entries."""
        self._staged_top: dict[str, int] = {}
        """``key -> newest generation staged`` (generations only grow)."""
        self._owner: int | None = None
        """the locked descriptor of the ``owner`` file (``_stale_dirs``)."""
        self.on_change: Callable[[], None] | None = None
        """Called after each manifest write (the supervisor wakes its workers' followers);
        must not block."""

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

    def stage(self, key: str, codec: SnapshotCodec, value: Any) -> Staged:
        """Write ``value`` with ``codec`` as the next generation of ``key``, not yet named in
        the manifest.

        :meth:`commit` names it; :meth:`discard` removes it. Generations of a
        key only grow (a discarded one is never reused).
        """
        with self._lock:
            entry = self.manifest().get(key)
            newest = max(int(entry["generation"]) if entry else 0, self._staged_top.get(key, 0))
            generation = newest + 1
            self._staged_top[key] = generation
        stem = self.path / f"{key}.{generation}"
        files = [Path(p) for p in codec.write(value, stem)]  # SnapshotWriteError: no files
        names = tuple(p.name for p in files if p.parent == self.path)
        return Staged(key, generation, stem.name, names)

    def commit(self, staged: Staged, staging: Staging | None = None) -> None:
        """Name ``staged`` in the manifest as its key's newest generation; unlink the one
        it replaces. ``SnapshotWriteError`` (manifest unchanged) when it cannot, or when a
        newer generation of the key is named already.

        With a ``staging`` still staging (a candidate config's) and a key the
        manifest names, it is held back there instead: named only when the
        config is accepted (:meth:`publish_config`), deleted when it is refused
        (``server/workers/supervisor/_staging.py``); a refused ``staging`` refuses it.
        """
        entry = {"generation": staged.generation, "stem": staged.stem, "files": list(staged.files)}
        with self._lock:
            if staging is not None and staging.state == "refused":
                raise SnapshotWriteError(f"{staged.key}: not published, its config was refused")
            manifest = self.manifest()
            old = manifest.get(staged.key)
            if staging is not None and staging.state == "staging" and old is not None:
                replaced = staging.entries.get(staged.key)
                staging.entries[staged.key] = entry
                if replaced is not None:  # fetched again before its config was decided
                    self._unlink(replaced)
                return
            if old is not None and int(old["generation"]) >= staged.generation:
                raise SnapshotWriteError(
                    f"{staged.key}: generation {old['generation']} is published already, "
                    f"newer than {staged.generation}"
                )
            manifest[staged.key] = entry
            self._write(manifest)
            if old is not None:
                self._unlink(old)

    def discard(self, staged: Staged) -> None:
        """Remove the files of ``staged``, which was never committed."""
        self._unlink({"files": list(staged.files)})

    def publish(self, key: str, codec: SnapshotCodec, value: Any) -> Staged:
        """Write ``value`` as the next generation of ``key`` and name it in the manifest."""
        staged = self.stage(key, codec, value)
        try:
            self.commit(staged)
        except BaseException:
            self.discard(staged)
            raise
        return staged

    def open_staged(self, staged: Staged, codec: SnapshotCodec) -> Any:
        """The value of ``staged``, opened as a worker opens a published one."""
        return codec.open(self.path / staged.stem, staged.generation)

    def _unlink(self, entry: dict[str, Any]) -> None:
        """Remove the files of one manifest entry (only names inside this directory)."""
        for name in entry.get("files") or ():  # bounded: the files one codec wrote
            if isinstance(name, str) and name and "/" not in name and not name.startswith("."):
                (self.path / name).unlink(missing_ok=True)

    def refuse(self, staging: Staging) -> None:
        """Refuse ``staging``: delete what it held back (a no-op once it was accepted)."""
        with self._lock:
            if staging.state != "staging":
                return
            staging.state = "refused"
            for entry in staging.entries.values():
                self._unlink(entry)
            staging.entries.clear()

    def amend(self, entry: str, value: dict[str, Any]) -> None:
        """Set the reserved manifest ``entry`` (``_reload``) to ``value``."""
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
                raise SnapshotWriteError(f"cannot write {self.path / name}: {exc}") from exc
            manifest[CONFIG_ENTRY] = {
                "generation": generation,
                "file": name,
                "content_hash": content_hash,
            }
            try:
                self._write(manifest)
            except SnapshotWriteError:
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
                self._unlink(entry)
        _log.info("removed %d shared snapshot(s) no config names any more", len(gone))
        return gone

    def _write(self, manifest: dict[str, Any]) -> None:
        try:
            self._write_manifest(manifest)
        except OSError as exc:
            raise SnapshotWriteError(f"cannot write {self.manifest_path}: {exc}") from exc

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        data = orjson.dumps(manifest)
        if len(data) > MANIFEST_MAX_BYTES:  # no reader would take it: the old one stays
            raise OSError(f"it would be {len(data)} bytes, over {MANIFEST_MAX_BYTES}")
        write_atomically(self.manifest_path, data)
        if self.on_change is not None:
            self.on_change()

    def remove(self) -> None:
        """Delete the directory and every snapshot in it (the supervisor, at exit)."""
        with self._lock:
            self._held.close()
        shutil.rmtree(self.path, ignore_errors=True)
        if self._owner is not None:  # only now: a sweep must never see it unowned
            os.close(self._owner)
            self._owner = None


def _release_freed_memory(codec: SnapshotCodec) -> None:
    """Hand the memory of a value just published and dropped back to the OS.

    The codec's allocator (its optional ``release_memory`` hook: Arrow's pool
    for ``feed_data``) and glibc keep freed pages for reuse, so without this the
    supervisor's RSS stays at its peak between refreshes. Never fails a publish.
    """
    call_hook(codec, "release_memory", label="shared snapshot codec", level=logging.DEBUG)
    try:
        trim_heap()
    except Exception as exc:  # a missing symbol: only memory is lost
        _log.debug("cannot release freed memory after a publish: %s", exc)


class PublishingFetcher:
    """Fetch with the type's own fetcher, stage with its codec, serve what
    workers map.

    Two-phase (the Manager's ``commit``/``discard`` hooks): a fetched value is
    written to the store (staged, not yet in the manifest) and dropped from the
    heap; the Manager gets the staged snapshot opened exactly as a worker
    opens it, runs its validators and budget on it, and commits it (the
    manifest names it) only once it is accepted, under its swap lock. A
    refused or pinned-meanwhile value is discarded: no worker ever sees it.
    A rollback commits the kept previous value, which is written again as the
    newest generation. Every hook of ``FetcherHooks`` is forwarded to the
    inner fetcher, and so are its ``admitted_upstream`` and ``source_report``:
    the supervisor of a fleet pod serves what the fleet's producer admitted,
    and shows where it came from.

    Guarantees: ``_pending`` is written by ``__call__``, ``commit`` and
    ``discard`` of one resource, which its Manager serialises (the refresh
    lock around a fetch and its admission; a rollback's commit never matches
    ``_pending``, so it only reads it).
    """

    def __init__(
        self,
        inner: Fetcher,
        store: SnapshotPublisher,
        key: str,
        codec: SnapshotCodec,
        staging: Staging | None = None,
    ) -> None:
        self._inner = inner
        self._store = store
        self.key = key
        self.codec = codec
        self._staging = staging
        self._pending: tuple[Any, Staged] | None = None
        self.admitted_upstream = admitted_upstream(inner)

    def __call__(self) -> Any:
        value = self._inner()
        if value is NOT_MODIFIED:
            return NOT_MODIFIED
        try:
            staged = self._store.stage(self.key, self.codec, value)
        finally:
            call_hook(value, "close", label=f"shared snapshot {self.key}")
            del value
            _release_freed_memory(self.codec)
        try:
            opened = self._store.open_staged(staged, self.codec)
        except BaseException:
            self._store.discard(staged)
            raise
        self._pending = (opened, staged)
        return opened

    def staged_of(self, value: Any) -> Staged | None:
        """Where ``value`` is staged when it is the fetched value not yet committed or
        discarded (what a value trial maps: ``_value_trial.py``); else None."""
        pending = self._pending
        return pending[1] if pending is not None and pending[0] is value else None

    def commit(self, value: Any) -> None:
        """Publish ``value``: the staged one named in the manifest, or (a rollback) written
        again as the newest generation. The inner fetcher's own ``commit`` runs first (what it
        raises refuses the swap, and nothing is published)."""
        forward = hook_of(self._inner, "commit")
        if forward is not None:
            forward(value)
        pending = self._pending
        if pending is not None and pending[0] is value:
            self._pending = None
            self._store.commit(pending[1], self._staging)  # on failure the Manager discards it
            return
        self._store.publish(self.key, self.codec, value)

    def discard(self, value: Any) -> None:
        """``value`` will not be served: its staged files go (then the inner fetcher's own
        ``discard``)."""
        pending = self._pending
        if pending is not None and pending[0] is value:
            self._pending = None
            self._store.discard(pending[1])
        forward = hook_of(self._inner, "discard")
        if forward is not None:
            forward(value)

    def source_report(self) -> SourceReport | None:
        """The inner fetcher's ``source_report()`` (None when it has none)."""
        return source_report_of(self._inner)

    def carry_over(self, value: Any) -> None:
        """A config reload carried ``value`` over: the inner fetcher resumes from it."""
        resume = hook_of(self._inner, "carry_over")
        if resume is not None:
            resume(value)

    def close(self) -> None:
        """Close the inner fetcher (its database connection)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._store.discard(pending[1])
        close = hook_of(self._inner, "close")
        if close is not None:
            close()

    def cancel(self) -> None:
        """Stop a load in flight (forwarded to the inner fetcher)."""
        cancel = hook_of(self._inner, "cancel")
        if cancel is not None:
            cancel()


def publishing_registry(
    base: Registry,
    store: SharedStore,
    named: set[str] | None = None,
    staging: Staging | None = None,
    made: list[PublishingFetcher] | None = None,
) -> Registry:
    """The types of ``base`` that declare a codec, each publishing into ``store``.

    A type without a codec is left out: the supervisor never fetches it (each
    worker does; ``Builder.check`` has validated its params). The key of
    every shared entry whose fetcher is made is added to ``named``; its
    fetcher publishes through ``staging`` (a candidate config's). Each fetcher made is
    appended to ``made`` (a value trial finds a staged value there).
    """
    registry = Registry()
    for schema in base.all():  # bounded: the registered types
        factory, codec = base.factory(schema.name), schema.codec
        if factory is None or codec is None:
            continue

        def publish(inner: Fetcher, key: str, codec: SnapshotCodec = codec) -> Fetcher:
            if named is not None:
                named.add(key)
            fetcher = PublishingFetcher(inner, store, key, codec, staging)
            if made is not None:
                made.append(fetcher)
            return fetcher

        registry.register(schema, KeyedFactory(factory, schema.name, publish))
    return registry
