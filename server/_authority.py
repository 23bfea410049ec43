"""``ConfigAuthority``: under ``--workers N``, the supervisor's one place that decides.

A config change (file watch, SIGHUP, ``POST /admin/reload`` in any worker) is
decided here alone, as ``server/_reload_policy.py`` says: the authority reads
the file, validates the bytes (engine, resources, dependencies), fetches and
publishes their data resources, then publishes the bytes themselves as the
next config generation in the store's manifest. Every worker's follower sees
it within one poll and rebuilds from exactly those bytes (never from the
file); a bad config is logged once, here, and publishes nothing, so no worker
switches. Each outcome is kept in the manifest (``_reload``) for every
worker's ``GET /config``.

Admin refreshes and pins of shared resources reach the authority over the
control channel (``server/_control.py``, answered by :meth:`handle`): one
source read, whatever worker was asked, and every worker maps the result.

Guarantees:
- Only the publisher Manager's refresh threads and the reload path write the
  store's data. The policy's ``_reload_lock`` serialises reloads, pins and
  unpins (each waits at most ``start_timeout`` for it), so the pins carried
  into a new publisher and the ``_pins`` entry describe the same one.
- A config generation is published only after its data resources were, and,
  when it holds a per-worker resource, after a trial process built all of it
  as a worker does (``server/_trial.py``): a generation no worker can build is
  refused like a bad reload in one process, and every worker keeps the last
  good one. So a worker building it finds every snapshot it names. After each reload, applied
  or not, the store is told which entries the newest generation names
  (``SharedStore.retire``): the others go once no worker needs them.
- Once ``stopping`` is set (the supervisor is shutting down) a reload applies
  nothing and is answered ``shutting down``, unrecorded; so is a busy one.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path
from typing import Any

import resources
from pineapple import resource

from ._build import Builder, BuildError, read_config_file
from ._config import Config
from ._control import ControlError
from ._reload_policy import ReloadOutcome, ReloadPolicy, Trigger
from ._shared import PINS_ENTRY, RELOAD_ENTRY, SharedStore, publishing_registry
from ._staging import Staging
from ._trial import trial_build

__all__ = ["ConfigAuthority"]

_MAX_NAME_BYTES = 256

_log = logging.getLogger("pineapple.server")


class ConfigAuthority(ReloadPolicy):
    """Owns the config, its generations and the publisher Manager of ``store``."""

    def __init__(self, config: Config, store: SharedStore, stopping: threading.Event) -> None:
        super().__init__(config.start_timeout)
        self.config = config
        self.store = store
        self.stopping = stopping
        """Set by the supervisor when it shuts down."""
        self.publisher: resource.Manager | None = None
        self._accepted_hash: str | None = None
        self._named: set[str] = set()
        """The store keys of the shared entries the publisher holds."""
        self.generation = 0
        """The config generation every worker serves or is switching to."""

    def load_initial(self) -> None:
        """Read, validate and publish the config (generation 1); raises when any step fails."""
        with self._reload_lock:
            data = read_config_file(self.config.path, self.config.max_config_bytes)
            if self._apply(data, hashlib.sha256(data).hexdigest()) is None:
                raise BuildError("start", "the supervisor was stopped while it started")

    def close(self) -> None:
        """Stop the publisher Manager (after the workers are gone)."""
        if self.publisher is not None:
            self.publisher.stop()

    # -- data ---------------------------------------------------------------------------

    def _registry(self, named: set[str], staging: Staging | None) -> resource.Registry:
        base = self.config.registry or resource.default_registry()
        return publishing_registry(base, self.store, named, staging)

    def load(
        self,
        data: bytes,
        carry_over: resource.Manager | None = None,
        named: set[str] | None = None,
        staging: Staging | None = None,
    ) -> resource.Manager:
        """Fetch and publish every data resource of ``data``; the started Manager.

        The store key of each of its shared entries is added to ``named``; a
        value of a key the store already names waits in ``staging`` until
        ``data`` is accepted (``server/_staging.py``).
        """
        registry = self._registry(set() if named is None else named, staging)
        manager = resource.Manager(registry, start_timeout=self.config.start_timeout)
        try:
            manager.load_from_root_config(
                data,
                carry_over=carry_over,
                env=self.config.env,
                base_dir=Path(self.config.path).parent,
            )
            manager.start()
        except Exception:
            manager.stop()
            raise
        return manager

    # -- the policy's steps -------------------------------------------------------------

    def _read(self) -> bytes:
        return read_config_file(self.config.path, self.config.max_config_bytes)

    def _closing(self) -> bool:
        return self.stopping.is_set()

    def _serving(self) -> tuple[str, int] | None:
        if self._accepted_hash is None:
            return None
        return self._accepted_hash, self.generation

    def _apply(self, data: bytes, digest: str) -> int | None:
        """Validate ``data``, publish its data, then its bytes; the new config generation.

        None when the supervisor began stopping before it could be accepted.

        Raises (``BuildError`` and whatever a fetch raises) with nothing published
        but the data snapshots of the new entries, which no manifest config names.
        """
        named: set[str] = set()
        staging = Staging()  # what it fetches for keys that serve waits until it is accepted
        try:
            Builder(self.config).check(data)  # engine, resources, dependencies: no fetch
            manager = self.load(data, carry_over=self.publisher, named=named, staging=staging)
            try:
                carried = self._trial_plan(manager)
                if carried is not None:  # built by a worker first (server/_trial.py)
                    self.store.retire(self._named | named)  # kept while the trial maps them
                    if not trial_build(self.config, self.store, data, self.stopping, carried):
                        manager.stop()
                        return None  # the supervisor is stopping: nothing is accepted
                self._carry_pins(self.publisher, manager)
                generation = self.store.publish_config(data, digest, staging)
            except Exception:
                manager.stop()
                raise
            old, self.publisher = self.publisher, manager
            self._accepted_hash, self.generation, self._named = digest, generation, named
            if old is not None:
                old.stop()
        finally:
            self.store.refuse(staging)  # refused: its held-back values go (else a no-op)
            # Applied or not, and after old.stop() (nothing publishes them again): the
            # entries the serving generation does not name go once no worker needs them.
            self.store.retire(self._named)
        self._publish_pins()
        return generation

    def _trial_plan(self, manager: resource.Manager) -> tuple[str, ...] | None:
        """What a trial must build of ``manager``'s config: None when a worker builds nothing
        that the supervisor did not; else the per-worker entries workers carry over.

        An entry is carried over when the serving config has it unchanged (its
        status keeps its generation); a worker then adopts its value, not fetching it.
        """
        old = {s.name: s.generation for s in self.publisher.status()} if self.publisher else {}
        per_worker = [s for s in manager.status() if s.type not in resources.SHARED_TYPES]
        carried = tuple(s.name for s in per_worker if old.get(s.name) == s.generation)
        hand = self.publisher is None and self.config.resources is not None  # built at start
        return carried if hand or len(carried) < len(per_worker) else None

    def _serves(self, serial: int) -> str:
        return f"generation {serial}; {self.config.workers} workers follow"

    def _kept(self) -> tuple[str, int | None]:
        return f"refused, every worker keeps config generation {self.generation}", self.generation

    def _refused(self, outcome: ReloadOutcome) -> ReloadOutcome:
        return outcome  # busy or shutting down: an answer to the caller alone

    def _record(self, outcome: ReloadOutcome, *, quiet: bool = False) -> ReloadOutcome:
        """Keep ``outcome`` and show it to every worker (``_reload`` in the manifest)."""
        if quiet:
            return outcome
        self.last = outcome
        try:
            self.store.amend(RELOAD_ENTRY, outcome.to_dict())
        except resources.SnapshotWriteError as exc:
            _log.warning("cannot record the reload outcome: %s", exc)
        return outcome

    # -- pins ---------------------------------------------------------------------------

    @staticmethod
    def _pins(manager: resource.Manager) -> dict[str, str]:
        """``name -> reason`` of the shared resources pinned in ``manager``."""
        pins: dict[str, str] = {}
        for status in manager.status():
            pinned = status.condition("Pinned")
            shared = status.type in resources.SHARED_TYPES
            if shared and pinned is not None and pinned.status == "True":
                pins[status.name] = pinned.message
        return pins

    def _carry_pins(self, old: resource.Manager | None, new: resource.Manager) -> None:
        """Pin in ``new`` what was pinned in ``old`` (a config reload keeps pins)."""
        if old is None:
            return
        names = set(new.names())
        for name, reason in self._pins(old).items():
            if name in names and new.status_of(name).type in resources.SHARED_TYPES:
                new.pin(name, reason)

    def _publish_pins(self) -> None:
        if self.publisher is not None:
            self.store.amend(PINS_ENTRY, self._pins(self.publisher))

    # -- the control channel ------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one control request from a worker (see ``server/_control.py``)."""
        op = request.get("op")
        force = request.get("force") is True
        if op == "reload":
            trigger: Trigger = "signal" if request.get("trigger") == "signal" else "admin"
            return self.reload(trigger, force=force).to_dict()
        name = request.get("name")
        if not isinstance(name, str) or len(name.encode()) > _MAX_NAME_BYTES:
            raise ControlError(f"control request {op!r}: a resource name is required")
        if op == "refresh":
            result = self._shared_publisher(name).refresh(name, force=force)
            return {"result": result, "forced": force}
        if op in ("pin", "unpin"):
            return self._pin(name, op == "pin")
        raise ControlError(f"unknown control request {op!r}")

    def _shared_publisher(self, name: str) -> resource.Manager:
        publisher = self.publisher
        if publisher is None:
            raise resource.ManagerStateError("the supervisor has not loaded the config yet")
        if publisher.status_of(name).type not in resources.SHARED_TYPES:
            raise ControlError(f"resource {name!r} is not shared: each worker owns its own")
        return publisher

    def _pin(self, name: str, pin: bool) -> dict[str, Any]:
        if not self._reload_lock.acquire(timeout=self._wait):
            raise resource.ManagerStateError("a config reload is running; try again")
        try:
            publisher = self._shared_publisher(name)
            if pin:
                publisher.pin(name)
                result = "pinned"
            else:
                result = "unpinned" if publisher.unpin(name) else "not_pinned"
            self._publish_pins()
            return {"result": result}
        finally:
            self._reload_lock.release()
