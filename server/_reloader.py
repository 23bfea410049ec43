"""The reloader: turns "the config may have changed" into a new snapshot, or into nothing.

Every trigger (the watcher, the poll backstop, SIGHUP, ``POST /admin/reload``)
calls :meth:`Reloader.reload`. A reload reads the file, skips it when the
content hash equals the serving snapshot's, builds a new snapshot carrying
over unchanged resource entries from the serving Manager, and swaps it in.

Guarantees:
- Reloads are serialised by one lock, so two triggers never build two
  snapshots at once and carry-over always reads the snapshot that is serving
  (only a reload, holding that lock, replaces it).
- A failed reload changes nothing that serves: the new engine and manager
  are torn down by the builder, the holder still points at the old snapshot.
  The failure is logged, counted, and kept (redacted) in ``last``.
- After :meth:`close` no reload builds anything, so shutdown cannot race a
  reload into publishing a snapshot nobody will retire.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._build import Builder, BuildError, read_config_file
from ._config import Config
from ._metrics import ServerMetrics
from ._snapshot import Snapshot, SnapshotHolder

__all__ = ["ReloadOutcome", "ReloadResult", "Reloader", "Trigger"]

_log = logging.getLogger("pineapple.server")

ReloadResult = Literal["ok", "unchanged", "error"]
Trigger = Literal["start", "watch", "poll", "signal", "admin"]


@dataclass(frozen=True)
class ReloadOutcome:
    """What one reload attempt did. ``error`` is redacted; ``step`` says where it failed."""

    result: ReloadResult
    trigger: Trigger
    at: float
    duration: float
    content_hash: str | None
    serial: int | None = None
    error: str | None = None
    step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form shown by ``GET /config`` and ``POST /admin/reload``."""
        return {
            "result": self.result,
            "trigger": self.trigger,
            "at": self.at,
            "duration_seconds": round(self.duration, 6),
            "content_hash": self.content_hash,
            "snapshot": self.serial,
            "error": self.error,
            "step": self.step,
        }


class Reloader:
    """Loads the first snapshot and every later one (see module docs)."""

    def __init__(
        self, config: Config, holder: SnapshotHolder, builder: Builder, metrics: ServerMetrics
    ) -> None:
        self._config = config
        self._holder = holder
        self._builder = builder
        self._metrics = metrics
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._closed = False
        self._failed_hash: str | None = None
        self.attempts = 0
        self.last: ReloadOutcome | None = None
        self.last_error: ReloadOutcome | None = None
        self.listeners: list[Callable[[ReloadOutcome], None]] = []

    def load_initial(self) -> Snapshot:
        """Build and publish the first snapshot; :class:`BuildError` if any step fails."""
        with self._lock:
            started = time.monotonic()
            data = read_config_file(self._config.path)
            snap = self._builder.build(data)
            self._holder.swap(snap)
            self._record(
                ReloadOutcome(
                    "ok",
                    "start",
                    time.time(),
                    time.monotonic() - started,
                    snap.info.content_hash,
                    serial=snap.serial,
                ),
                count=False,
            )
            return snap

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Reload if the file changed (always with ``force``); never raises a build error.

        The watcher and the poll backstop do not retry content that already
        failed (it is still reported in ``last``); SIGHUP and admin do.
        """
        with self._lock:
            if self._closed:
                return self._record(
                    ReloadOutcome("error", trigger, time.time(), 0.0, None, error="shutting down")
                )
            started = time.monotonic()
            try:
                data = read_config_file(self._config.path)
            except BuildError as exc:
                return self._failed(trigger, started, None, exc)
            digest = hashlib.sha256(data).hexdigest()
            current = self._holder.current
            if not force and current is not None and current.info.content_hash == digest:
                self._failed_hash = None
                if trigger not in ("watch", "poll"):
                    _log.info("config %s unchanged (%s): nothing to reload", digest[:12], trigger)
                return self._record(
                    ReloadOutcome(
                        "unchanged", trigger, time.time(), 0.0, digest, serial=current.serial
                    ),
                    quiet=trigger in ("watch", "poll"),
                )
            if trigger in ("watch", "poll") and digest == self._failed_hash:
                assert self.last is not None
                return self.last
            carry = current.manager if current is not None else None
            try:
                snap = self._builder.build(data, carry_over=carry)
            except BuildError as exc:
                return self._failed(trigger, started, digest, exc)
            self._holder.swap(snap)
            self._failed_hash = None
            _log.info(
                "config %s reloaded (%s): snapshot %d serving",
                digest[:12],
                trigger,
                snap.serial,
            )
            return self._record(
                ReloadOutcome(
                    "ok",
                    trigger,
                    time.time(),
                    time.monotonic() - started,
                    digest,
                    serial=snap.serial,
                )
            )

    def close(self) -> None:
        """Refuse every later reload (waits for one in progress)."""
        with self._lock:
            self._closed = True

    def wait_for(self, predicate: Callable[[ReloadOutcome], bool], timeout: float) -> bool:
        """Wait until the latest outcome satisfies ``predicate`` (tests, tooling)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.last is not None and predicate(self.last), timeout
            )

    # -- recording ------------------------------------------------------------------------

    def _failed(
        self, trigger: Trigger, started: float, digest: str | None, exc: BuildError
    ) -> ReloadOutcome:
        self._failed_hash = digest
        outcome = ReloadOutcome(
            "error",
            trigger,
            time.time(),
            time.monotonic() - started,
            digest,
            error=str(exc),
            step=exc.step,
        )
        _log.error("config reload (%s) failed, the previous config keeps serving: %s", trigger, exc)
        return self._record(outcome)

    def _record(
        self, outcome: ReloadOutcome, *, count: bool = True, quiet: bool = False
    ) -> ReloadOutcome:
        if count and not quiet:
            self._metrics.observe_reload(outcome.result, outcome.duration)
        with self._changed:
            if not quiet:
                self.attempts += 1
                self.last = outcome
                if outcome.result == "error":
                    self.last_error = outcome
            self._changed.notify_all()
        for listener in list(self.listeners):
            try:
                listener(outcome)
            except Exception:
                _log.exception("a reload listener failed")
        return outcome
