"""The snapshot: one Engine and one Manager, served together, retired together.

Guarantees:
- A :class:`Snapshot` is born with one *baseline* reference, held by the
  :class:`SnapshotHolder` while it is current. Each request takes one more
  reference with ``acquire()`` and drops it with ``release()``. The count is
  the resource runtime's own :class:`pineapple.resource.lowlevel.RefValue` (compiled,
  atomic; see its Guarantees): ``acquire`` adds a reference only while the
  count is positive, so a snapshot whose count has reached zero is never
  revived, and only the release that reaches zero hands over its "value",
  whose ``close()`` starts the teardown. None of it relies on the GIL.
- ``retire()`` drops the baseline reference exactly once (a second call is a
  no-op). The release that takes the count to zero starts the teardown, and
  only one release can observe that transition (the count never rises from
  0), so teardown runs exactly once: the Manager is stopped (its values are
  closed after their last borrower releases), then the Engine is closed.
- Teardown never runs on the releasing thread (which may be the event loop)
  nor on the closer thread (``Manager.stop`` waits for that thread's queue):
  the closer only starts a thread of its own for it; ``wait_closed()`` waits
  for that one.
- A request therefore always sees an Engine and a Manager from the same
  config, both alive for the whole request, even if a reload swaps in a new
  snapshot in the middle of it.
- :class:`SnapshotHolder` publishes the new snapshot *before* retiring the
  old one, so a request that loses the race against a swap (its ``acquire``
  on the old snapshot fails) re-reads the holder and finds the new one.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pineapple import Context, resource
from pineapple.engine.http import with_config_revision
from pineapple.resource.lowlevel import RefValue

from ._config import EngineLike

__all__ = ["ConfigInfo", "Snapshot", "SnapshotHolder"]

_log = logging.getLogger("pineapple.server")


@dataclass(frozen=True)
class ConfigInfo:
    """What is known about the config a snapshot was built from (no content)."""

    path: str
    version: Any
    create_time: Any
    content_hash: str
    size: int
    loaded_at: float
    revision: str = field(init=False, compare=False)
    """The content's short hash: changes with every edit of the file (made once: every
    ``/execute`` answer reads it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "revision", self.content_hash[:12])  # frozen: set once here

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form shown by ``GET /config``.

        ``version``: the file's ``_PINEAPPLE_VERSION`` or, when it has none, its
        ``revision`` (the short content hash), so it always names this config.
        """
        return {
            "path": self.path,
            "version": self.version if self.version is not None else self.revision,
            "revision": self.revision,
            "create_time": self.create_time,
            "content_hash": self.content_hash,
            "size": self.size,
            "loaded_at": self.loaded_at,
        }


class Snapshot:
    """An Engine and a Manager held together by a reference count (see module docs)."""

    __slots__ = (
        "_closed",
        "_lock",
        "_ref",
        "_retired",
        "acquire",
        "blocking",
        "context",
        "engine",
        "info",
        "manager",
        "release",
        "serial",
    )

    def __init__(
        self,
        engine: EngineLike,
        manager: resource.Manager,
        info: ConfigInfo,
        serial: int,
        context: Context | None = None,
    ) -> None:
        self.engine = engine
        self.manager = manager
        self.info = info
        self.serial = serial
        # Contexts are immutable: one per snapshot serves every request (``context``: one
        # that borrows from ``manager`` otherwise, e.g. in spans; ``server/_tracing.py``).
        # It names the config's revision for traces (``pineapple/engine/_provenance.py``).
        self.context: Context = with_config_revision(
            resource.with_resources(Context(), manager) if context is None else context,
            info.revision,
        )
        # Whether ``engine.execute`` must run on a worker thread (fixed per engine).
        self.blocking = bool(engine.blocking)
        # The holder's baseline reference; the last release closes the _Teardown.
        self._closed = threading.Event()
        teardown = _Teardown(engine, manager, info, serial, self._closed)
        self._ref = RefValue(teardown, f"snapshot/{serial}")
        self.acquire = self._ref.acquire
        """Take one reference if the snapshot is still live; False once it is tearing down."""
        self.release = self._ref.release
        """Drop one reference; the last one starts the teardown (on another thread).

        The reference count's own method (one C call with ``_cref``), as ``acquire``."""
        self._retired = False
        self._lock = threading.Lock()

    @property
    def refs(self) -> int:
        """The current count (for tests and status; racy by nature)."""
        return self._ref.refs

    @property
    def closed(self) -> bool:
        """True once teardown has finished."""
        return self._closed.is_set()

    def retire(self) -> None:
        """Drop the baseline reference (once); teardown follows the last request."""
        with self._lock:
            if self._retired:
                return
            self._retired = True
        self.release()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Wait until teardown has finished; False on timeout."""
        return self._closed.wait(timeout)

    def __repr__(self) -> str:
        return f"Snapshot({self.serial}, refs={self.refs}, config={self.info.content_hash[:12]})"


@dataclass(frozen=True, slots=True, eq=False)
class _Teardown:
    """The snapshot's counted "value": its ``close()`` (on the closer thread)
    starts the teardown on a thread of its own.

    It holds the parts, not the snapshot, so no reference cycle runs through
    the ``RefValue``: a retired snapshot is freed by reference counting as soon
    as its last borrower lets go, without waiting for the cycle collector.
    """

    engine: EngineLike
    manager: resource.Manager
    info: ConfigInfo
    serial: int
    closed: threading.Event
    """Set once the teardown has finished (the snapshot's ``wait_closed`` waits on it)."""

    def close(self) -> None:
        threading.Thread(
            target=self._run, name=f"pineapple-retire-{self.serial}", daemon=True
        ).start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self.manager.stop()
        except Exception:
            _log.exception("snapshot %d: stopping its resource manager failed", self.serial)
        try:
            self.engine.close()
        except Exception:
            _log.exception("snapshot %d: closing its engine failed", self.serial)
        finally:
            self.closed.set()
        _log.info(
            "snapshot %d (config %s) retired in %.3fs",
            self.serial,
            self.info.content_hash[:12],
            time.monotonic() - started,
        )


class SnapshotHolder:
    """The current snapshot; requests borrow it, reloads swap it.

    ``acquire()`` never blocks on a reload: a reload builds its snapshot
    completely before ``swap`` publishes it with one reference assignment.
    """

    __slots__ = ("_current", "_swap_lock")

    def __init__(self) -> None:
        self._current: Snapshot | None = None
        self._swap_lock = threading.Lock()

    @property
    def current(self) -> Snapshot | None:
        """The snapshot new requests get (None before the first load and after close)."""
        return self._current

    def acquire(self) -> Snapshot | None:
        """The current snapshot with one reference taken (release it!), or None."""
        snap = self._current
        while snap is not None:
            if snap.acquire():
                return snap
            snap = self._current  # lost the race with a swap: the new one is published
        return None

    def swap(self, new: Snapshot) -> Snapshot | None:
        """Publish ``new``, then retire the previous snapshot; returns the previous one."""
        with self._swap_lock:
            old, self._current = self._current, new
        if old is not None:
            old.retire()
        return old

    def close(self) -> Snapshot | None:
        """Unpublish and retire the current snapshot (shutdown); returns it."""
        with self._swap_lock:
            old, self._current = self._current, None
        if old is not None:
            old.retire()
        return old
