"""``ConfigAuthority``: under ``--workers N``, the supervisor's one place that decides.

A config change (file watch, SIGHUP, ``POST /admin/reload`` in any worker) is
decided here alone, by the one reload policy (``server/_reload_policy.py``)
over the authority as its target: the authority reads the file, parses it
once and validates it (engine, resources, dependencies: ``check``), fetches
and publishes its data resources, then publishes the bytes themselves as the
next config generation in the store's manifest (``apply``). Every worker's follower sees
it within one poll and rebuilds from exactly those bytes (never from the
file); a bad config is logged once, here, and publishes nothing, so no worker
switches. Each outcome is kept in the manifest (``_reload``) for every
worker's ``GET /config``, and in the pod's status (``server/workers/_pod_status.py``).

The authority is the pod's one process for what it shares, with the
single-process semantics: its publisher is a plain Manager (validators,
``keep_previous`` and rollback, pins, the memory budget, carry-over and
``NOT_MODIFIED`` across reloads) whose shared values are the snapshots as
workers map them, and a value is published only once that Manager accepted
it (``PublishingFetcher``). Admin actions, reloads and the statuses of shared
resources reach it over the control channel (``server/workers/_control.py``,
answered by :meth:`handle` with the answers of ``server/_decisions.py``): one
source read, one pin, one log line, whatever worker was asked. The statuses
of shared resources, the reload record and ``halted`` are posted as the pod's
status (:attr:`board`), which workers read without asking: after each
decision and each recorded reload, before the answer, and every half
second on the board's thread (``server/workers/_pod_status.py``).

Guarantees:
- Only the publisher Manager's refresh threads and the reload path write the
  store's data. The policy's lock (``ReloadPolicy.exclusive``) serialises
  reloads, pins, unpins and rollbacks (each waits at most ``start_timeout``
  for it), so a
  pin lands on the publisher that the next reload carries over (an unchanged
  entry keeps it, a changed one starts unpinned).
- One reload parses its bytes once (``check``, read by ``apply``: the
  publisher, the per-worker fingerprints, the engine's, the trial plan).
- A config generation is published only after its data resources were, and,
  when it holds a per-worker resource, after a trial process built all of it
  as a worker does (``server/workers/supervisor/_trial.py``): a generation no worker can build is
  refused like a bad reload in one process, and every worker keeps the last
  good one. So a worker building it finds every snapshot it names. After each reload, applied
  or not, the store is told which entries the newest generation names
  (``SharedStore.retire``): the others go once no worker needs them.
- A worker that cannot build the generation the authority accepted last
  (``cannot_build``) takes the pod back to the config accepted before it, as
  the next generation, on a thread of its own under the reload lock
  (:meth:`roll_back`): one rollback thread per generation (``_rollback_asked``,
  under ``_loading_lock``, only grows; later reports of it start none, and a
  report that finds a newer generation changes nothing), never of a generation that is
  itself a rollback, and the bytes rolled back are not applied again by the
  watcher (the failed hash), only by SIGHUP or an admin. The listeners of
  :attr:`rolled_back` (the config history) are told before its outcome is
  recorded, so the status posted with it names the config that serves.
- Once ``stopping`` is set (the supervisor is shutting down) a reload applies
  nothing and is answered ``shutting down``, unrecorded; so is a busy one.
  :meth:`cancel` (SIGTERM) cancels the publisher Manager a reload is starting
  (its fetches in flight cancelled, a MySQL query killed): ``_loading`` changes
  only under ``_loading_lock``, and a Manager joins it only while ``stopping``
  is unset, so a cancel after ``stopping`` was set sees every Manager that
  could still start, and no later one starts.

A pod in a fleet (``--fleet``) gives the authority its own ``wiring``: a
registry whose shared types read the fleet store, and (without a config
file) the fleet's config as its source. Workers and trial processes never
get it: they map what the authority published, as without a fleet.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from pineapple import resource
from pineapple._error_text import capped
from pineapple.resource.lowlevel import (
    LoadedConfig,
    MemoryBudget,
    RefreshResult,
    SnapshotWriteError,
)

from ..._build import Builder
from ..._build_error import BuildError
from ..._config import Config, Wiring, source_view
from ..._decisions import ACTIONS, Action, Refused, act, stale_sources
from ..._reload_policy import ReloadOutcome, ReloadPolicy, Trigger
from ..._request_sample import SampledRequest
from ...metrics._metrics import ServerMetrics
from .._control import ControlError
from .._pod_status import STATUS_FILE, StatusBoard
from .._publisher import start_publisher
from .._sample_channel import candidate_requests
from .._store_format import RELOAD_ENTRY, codec_of
from ._publishing import PublishingFetcher, SharedStore, Staged, publishing_registry
from ._staging import Staging
from ._trial import trial_build
from ._value_trial import SharedValueReplay

__all__ = ["ConfigAuthority", "Middleware"]

Middleware = Callable[[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]], dict[str, Any]]
"""``(request, decide) -> answer``: a control request seen before ``decide`` (the
authority's own) answers it, or instead of it."""

_MAX_NAME_BYTES = 256

_log = logging.getLogger("pineapple.server")


class ConfigAuthority:
    """Owns the config, its generations and the publisher Manager of ``store``; the
    target of its reload :attr:`policy` (read, check, apply, describe)."""

    def __init__(
        self,
        config: Config,
        store: SharedStore,
        stopping: threading.Event,
        metrics: ServerMetrics | None = None,
        wiring: Wiring | None = None,
    ) -> None:
        self.config = config
        self.wiring = wiring if wiring is not None else config.wiring
        """What this process builds with (a fleet pod's: never given to workers)."""
        self.store = store
        self.metrics = metrics
        """The supervisor's metrics: its fetches, refusals and reloads (the pod's)."""
        self.stopping = stopping
        """Set by the supervisor when it shuts down."""
        self.publisher: resource.Manager | None = None
        self._named: set[str] = set()
        """The store keys of the shared entries the publisher holds."""
        self.generation = 0
        """The config generation every worker serves or is switching to."""
        self.accepted_at: float | None = None
        """When that generation was accepted (Unix seconds)."""
        # One budget for every publisher, as one process has one for every snapshot.
        self._budget = MemoryBudget(config.resource_memory_budget_bytes or None)
        self._serving_per_worker: dict[str, str] = {}
        """``name -> fingerprint`` of the serving config's per-worker entries."""
        self._accepted: tuple[bytes, str] | None = None
        self.replay_report: dict[str, Any] | None = None
        """What the last accepted config's warm-up replay found (``server/_replay.py``)."""
        """The bytes and hash of the config accepted last."""
        self._previous: tuple[bytes, str] | None = None
        """Those of the config accepted before it (None: none, or it was a rollback)."""
        self._serving_engine: str | None = None
        """The engine fingerprint (``_engine_print``) of the serving config."""
        self._loading_lock = threading.Lock()
        self._loading: set[resource.Manager] = set()
        """The publisher Managers a reload is starting (see the module's Guarantees)."""
        self._rollback_asked = 0
        """The newest generation a worker could not build (one rollback thread each)."""
        self.value_replay = SharedValueReplay(config, store, stopping)
        self._made: weakref.WeakKeyDictionary[resource.Manager, list[PublishingFetcher]] = (
            weakref.WeakKeyDictionary()
        )
        """The publishing fetchers each live publisher made (a staged refresh's files)."""
        """Replays a refreshed shared value of a ``replay`` entry in a trial (``_value_trial``)."""
        self.board = StatusBoard(store.path / STATUS_FILE, self.pod_status)
        """Where the pod's status is posted for the workers (``_pod_status``)."""
        self.policy = ReloadPolicy(
            self,
            wait=config.start_timeout,
            closing=stopping.is_set,
            on_count=self._count,
            on_record=self._show,
            names_kept=True,
        )
        """Decides every reload (``server/_reload_policy.py``); its listeners see each outcome
        (a fleet pod keeps the fleet config it accepted)."""
        self.extra_status: dict[str, Callable[[], Any]] = {}
        """More of the pod's status, by key (the config history's, ``_history_pod``)."""
        self.rolled_back: list[Callable[[bytes, str, str, float], None]] = []
        """Told of each automatic rollback (:meth:`roll_back`), before its outcome is
        recorded: the bytes that serve again, the hash of those the workers could not
        build, why, and when (the config history's, ``_history_pod``)."""
        self.middleware: Middleware | None = None
        """Sees every control request first (the config history's: its own requests, and
        the resource pins it keeps); None: each is decided here alone."""

    @property
    def serving_hash(self) -> str | None:
        """The content hash of the config accepted last (None before the first)."""
        serving = self.policy.served
        return None if serving is None else serving[0]

    def load_initial(self) -> None:
        """Read, validate and publish the config (generation 1); raises when any step fails."""
        self.policy.start(record=False)

    def reload(self, trigger: Trigger, *, force: bool = False) -> ReloadOutcome:
        """Decide a config change (the watcher, SIGHUP, a worker's admin): see the policy."""
        return self.policy.reload(trigger, force=force)

    def cancel(self) -> None:
        """Cancel the publisher a reload is starting (after ``stopping`` was set; no wait)."""
        with self._loading_lock:
            loading = list(self._loading)
        for manager in loading:  # bounded: at most one reload starts one at a time
            manager.cancel()

    def close(self) -> None:
        """Stop the publisher Manager (after the workers are gone)."""
        if self.publisher is not None:
            self.publisher.stop()

    # -- data ---------------------------------------------------------------------------

    def _base(self) -> resource.Registry:
        return self.wiring.registry or self.config.resource_types()

    def load(
        self,
        loaded: LoadedConfig,
        carry_over: resource.Manager | None = None,
        named: set[str] | None = None,
        staging: Staging | None = None,
    ) -> resource.Manager:
        """Fetch and publish every shared resource of ``loaded``; the started Manager.

        Shared: its type declares a codec. The others are each worker's own and
        are not registered here, so never fetched by the supervisor. The store
        key of each shared entry is added to ``named``; a value of a key the
        store already names waits in ``staging`` until the config is accepted
        (``server/workers/supervisor/_staging.py``).
        """
        made: list[PublishingFetcher] = []
        registry = publishing_registry(
            self._base(), self.store, set() if named is None else named, staging, made
        )
        manager = start_publisher(
            registry,
            loaded,
            metrics=_Noted(self.metrics, self.board),  # a refresh's end changes the status
            start_timeout=self.config.start_timeout,
            budget=self._budget,
            carry_over=carry_over,
            starting=self._starting,
            replay=self.value_replay.checker(made),
        )
        self._made[manager] = made
        return manager

    @contextlib.contextmanager
    def _starting(self, manager: resource.Manager) -> Iterator[None]:
        """Keep ``manager`` in ``_loading`` while it starts (a shutdown stops it), or refuse
        to start it once the supervisor is stopping."""
        with self._loading_lock:
            if self.stopping.is_set():
                raise BuildError("start", "cancelled: the supervisor is shutting down")
            self._loading.add(manager)
        try:
            yield
        finally:
            with self._loading_lock:
                self._loading.discard(manager)

    # -- the policy's target ------------------------------------------------------------

    def read(self) -> bytes:
        """The config's bytes (the file, or a fleet pod's config source)."""
        return self.wiring.read_config(self.config.path, self.config.max_config_bytes)

    def check(self, data: bytes) -> LoadedConfig:
        """``data`` parsed once, then validated: engine, resources, dependencies (no fetch)."""
        builder = Builder(self.config)
        loaded = builder.load(data)
        builder.check(loaded)
        return loaded

    def apply(self, config: LoadedConfig) -> int | None:
        """Publish the data of ``config`` (checked), then its bytes; the new generation.

        None when the supervisor began stopping before it could be accepted.

        Raises (``BuildError`` and whatever a fetch raises) with nothing published
        but the data snapshots of the new entries, which no manifest config names.
        """
        loaded, data, digest = config, config.data, config.content_hash
        named: set[str] = set()
        staging = Staging()  # what it fetches for keys that serve waits until it is accepted
        try:
            # Unchanged entries keep their value, pin and previous value; a changed
            # entry is fetched anew and unpinned, as in one process.
            try:
                manager = self.load(loaded, carry_over=self.publisher, named=named, staging=staging)
            except Exception:
                if self.stopping.is_set():
                    return None  # cancelled by the shutdown: nothing is decided
                raise
            try:
                per_worker = self._per_worker(loaded)
                engine = _engine_print(loaded)
                carried = self._trial_plan(per_worker, engine)
                sample = self._replayed(data)
                self.replay_report = None
                if carried is None and sample is not None:  # a trial replays it
                    carried = tuple(per_worker)  # no plan: every per-worker entry unchanged
                if carried is not None:  # built by a worker first (_trial.py)
                    self.store.retire(self._named | named)  # kept while the trial maps them
                    replayed: dict[str, Any] = {}
                    if not trial_build(
                        self.config, self.store, data, self.stopping, carried, sample, replayed
                    ):
                        manager.stop()
                        return None  # the supervisor is stopping: nothing is accepted
                    self.replay_report = replayed or None
                generation = self.store.publish_config(data, digest, staging)
            except Exception:
                manager.stop()
                raise
            old, self.publisher = self.publisher, manager
            self.generation, self._named = generation, named
            self.accepted_at = time.time()
            self._previous, self._accepted = self._accepted, (data, digest)
            self._serving_per_worker, self._serving_engine = per_worker, engine
            if old is not None:
                old.stop()
        finally:
            self.store.refuse(staging)  # refused: its held-back values go (else a no-op)
            # Applied or not, and after old.stop() (nothing publishes them again): the
            # entries the serving generation does not name go once no worker needs them.
            self.store.retire(self._named)
        return generation

    def _replayed(self, data: bytes) -> list[SampledRequest] | None:
        """The pod's sample a candidate replays (``_sample_channel.py``); None: no replay
        (the first config, or the supervisor is stopping)."""
        if self._accepted is None or self.stopping.is_set():
            return None
        return candidate_requests(self.config, self.store.path, data)

    def _per_worker(self, loaded: LoadedConfig) -> dict[str, str]:
        """``name -> fingerprint`` of the entries of ``loaded`` whose type has no codec."""
        base = self._base()
        return {e.name: e.fingerprint() for e in loaded.entries if codec_of(base, e.type) is None}

    def _trial_plan(self, per_worker: dict[str, str], engine: str) -> tuple[str, ...] | None:
        """What a trial must build of a candidate config: None when a worker builds nothing
        that the supervisor did not; else the per-worker entries workers carry over.

        An entry is carried over when the serving config has it unchanged (the
        same fingerprint); a worker then adopts its value, not fetching it. A
        reload that changes the engine (``engine``: its fingerprint) is built by
        a trial too, so that a build workers cannot finish in time is refused.
        """
        old = self._serving_per_worker
        carried = tuple(name for name, fp in per_worker.items() if old.get(name) == fp)
        hand = self.publisher is None and self.config.resources is not None  # built at start
        rebuilt = self._serving_engine is not None and self._serving_engine != engine
        return carried if hand or rebuilt or len(carried) < len(per_worker) else None

    def try_candidate(self, loaded: LoadedConfig) -> dict[str, Any] | None:
        """Build ``loaded`` (checked) in a trial process as a worker would and replay the
        pod's sample on it, publishing nothing (a stage: ``_pod_stage.py``); what the
        replay found. :class:`BuildError` when it cannot be built or is refused;
        :class:`Refused` (409) when its shared resources differ from the serving
        config's (a staged candidate maps the serving config's shared values)."""
        accepted = self._accepted
        if accepted is None:
            raise Refused(409, "no config serves yet: nothing to stage beside")
        if self._shared_prints(loaded) != self._shared_prints(
            Builder(self.config).load(accepted[0])
        ):
            raise Refused(
                409, "under --workers a staged config keeps the serving config's shared resources"
            )
        per_worker = self._per_worker(loaded)
        old = self._serving_per_worker
        carried = tuple(name for name, fp in per_worker.items() if old.get(name) == fp)
        replayed: dict[str, Any] = {}
        sample = self._replayed(loaded.data)
        if not trial_build(
            self.config, self.store, loaded.data, self.stopping, carried, sample, replayed
        ):
            raise BuildError("start", "cancelled: the supervisor is shutting down")
        return replayed or None

    def _shared_prints(self, loaded: LoadedConfig) -> dict[str, str]:
        base = self._base()
        shared = [e for e in loaded.entries if codec_of(base, e.type) is not None]
        return {e.name: e.fingerprint() for e in shared}

    def serving_config(self) -> tuple[str, int, float] | None:
        """The content hash, generation and acceptance time of the serving config."""
        serving, accepted_at = self.policy.served, self.accepted_at
        if serving is None or accepted_at is None:
            return None
        return serving[0], serving[1], accepted_at

    def describe(self, serial: int | None) -> str:
        if serial is None:
            return f"refused, every worker keeps config generation {self.generation}"
        return f"generation {serial}; {self.config.workers} workers follow"

    def _count(self, outcome: ReloadOutcome) -> None:
        if self.metrics is not None:
            self.metrics.observe_reload(outcome.result, outcome.duration)

    def _show(self, outcome: ReloadOutcome) -> None:
        """Show a recorded outcome to every worker (``_reload`` in the manifest, the board)."""
        try:
            self.store.amend(RELOAD_ENTRY, outcome.to_dict())
        except SnapshotWriteError as exc:
            _log.warning("cannot record the reload outcome: %s", exc)
        self.board.post()

    # -- the control channel ------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one control request from a worker (see ``server/workers/_control.py``).

        A reload or an action answers what :mod:`server._decisions` answers in one
        process; a refusal is a :class:`Refused` (its status and the resource's).
        The pod's status is posted before the answer, so the next read in any
        worker shows what it decided.
        """
        try:
            if self.middleware is not None:
                return self.middleware(request, self._decide_request)
            return self._decide_request(request)
        finally:
            self.board.post()

    def _decide_request(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        force = request.get("force") is True
        if op == "cannot_build":
            return self._cannot_build(request)
        if op == "reload":
            trigger: Trigger = "signal" if request.get("trigger") == "signal" else "admin"
            return self.reload(trigger, force=force).to_dict()
        name = request.get("name")
        if not isinstance(name, str) or len(name.encode()) > _MAX_NAME_BYTES:
            raise ControlError(f"control request {op!r}: a resource name is required")
        if op not in ACTIONS:
            raise ControlError(f"unknown control request {op!r}")
        action: Action = op
        if action == "refresh":  # a fetch may be long: not under the reload lock
            return act(self._shared_publisher(name), action, name, force)
        # Serialised with reloads: a pin lands on the publisher the next reload carries over.
        with self.policy.exclusive() as held:
            if not held:
                raise Refused(503, "a config reload is running; try again")
            return act(self._shared_publisher(name), action, name, force)

    def _cannot_build(self, request: dict[str, Any]) -> dict[str, Any]:
        """A worker cannot build a generation: roll back on a thread; answered at once."""
        generation, why = request.get("generation"), request.get("error")
        if not isinstance(generation, int) or not isinstance(why, str):
            raise ControlError("control request 'cannot_build': a generation and an error")
        with self._loading_lock:
            first = generation > self._rollback_asked
            self._rollback_asked = max(self._rollback_asked, generation)
        if not first:
            return {"result": "noted", "generation": generation}
        threading.Thread(
            target=self.roll_back,
            args=(generation, capped(why)),
            name="pineapple-rollback",
            daemon=True,
        ).start()
        return {"result": "noted", "generation": generation}

    def roll_back(self, generation: int, why: str) -> ReloadOutcome | None:
        """Workers cannot build ``generation``: serve the config accepted before it again.

        Does nothing (None) unless ``generation`` is the newest one and was not
        itself a rollback. The outcome is recorded as a reload ``error`` naming
        the failed generation and the one the pod went back to.
        """
        with self.policy.exclusive() as held:
            if not held:
                _log.error("cannot roll back generation %d: a reload runs", generation)
                return None
            return self._roll_back(generation, why)

    def _roll_back(self, generation: int, why: str) -> ReloadOutcome | None:
        """:meth:`roll_back` with the policy's lock held."""
        previous, failed = self._previous, self._accepted
        if generation != self.generation or previous is None or failed is None:
            return None
        if self.stopping.is_set():
            return None
        started = time.monotonic()
        try:
            serial = self.policy.apply_held(previous[0])
        except Exception as exc:  # the pod keeps the generation it has
            _log.error(
                "workers cannot build config generation %d (%s), and going back to the "
                "previous config failed: %s",
                generation,
                why,
                exc,
            )
            return None
        if serial is None:
            return None
        self._previous = None  # a rollback is not rolled back in turn
        self.policy.refuse_again(failed[1])  # the watcher does not apply those bytes again
        error = (
            f"workers could not build config generation {generation} ({why}); the pod "
            f"went back to the previous config as generation {serial}"
        )
        _log.error("config reload refused: %s", error)
        at = time.time()
        for listener in list(self.rolled_back):  # bounded: the listeners wired at start
            try:
                listener(previous[0], failed[1], error, at)
            except Exception:
                _log.exception("a rollback listener failed")
        outcome = ReloadOutcome(
            "error",
            "supervisor",
            at,
            time.monotonic() - started,
            failed[1],
            serial=serial,
            error=error,
            step="start",
        )
        return self.policy.record(outcome)

    def shared_publisher(self, name: str) -> resource.Manager:
        """The publisher Manager that holds ``name``; :class:`Refused` (503 nothing loaded,
        400 each worker owns it)."""
        return self._shared_publisher(name)

    def staged_of(self, publisher: resource.Manager, value: Any) -> Staged | None:
        """Where ``value``, fetched by ``publisher`` and not yet committed, is staged."""
        made = self._made.get(publisher, [])
        # Bounded: one fetcher per shared entry of the config.
        return next((s for f in made if (s := f.staged_of(value)) is not None), None)

    def _shared_publisher(self, name: str) -> resource.Manager:
        publisher = self.publisher
        if publisher is None:
            raise Refused(503, "the supervisor has not loaded the config yet")
        if name not in publisher.names():
            raise Refused(400, f"resource {name!r} is not shared: each worker owns its own")
        return publisher

    def pod_status(self) -> dict[str, Any]:
        """What the workers show of the supervisor (posted by :attr:`board`): the reload
        record (as one process's ``GET /config``), the publisher's ``halted`` and the
        status of every shared resource (the publisher holds only shared entries)."""
        publisher, policy = self.publisher, self.policy
        config = {
            "reload_attempts": policy.attempts,
            "last_reload": policy.last.to_dict() if policy.last else None,
            "last_reload_error": policy.last_error.to_dict() if policy.last_error else None,
            "halted": publisher.halted_reason if publisher is not None else None,
            "stale": stale_sources(publisher) if publisher is not None else {},
            "config_source": source_view(self.wiring.config_source),
        }
        statuses = [st.to_dict() for st in publisher.status()] if publisher is not None else []
        extra = {key: status() for key, status in self.extra_status.items()}
        return {"config": config, "resources": statuses, **extra}


class _Noted:
    """The publisher's ``ManagerMetrics``: the supervisor's metrics, and a note to the
    board that a status changed after every fetch attempt (so the workers see it within
    the board's next wake)."""

    def __init__(self, metrics: ServerMetrics | None, board: StatusBoard) -> None:
        self._metrics = metrics
        self._board = board

    def observe_refresh(
        self, name: str, type_name: str, result: RefreshResult, seconds: float
    ) -> None:
        if self._metrics is not None:
            self._metrics.observe_refresh(name, type_name, result, seconds)
        self._board.changed()

    def observe_refusal(self, name: str, type_name: str, check: str) -> None:
        if self._metrics is not None:
            self._metrics.observe_refusal(name, type_name, check)
        self._board.changed()


def _engine_print(loaded: LoadedConfig) -> str:
    """A hash of what a worker's engine is built from: the config without its resources."""
    root = loaded.root or {}
    rest = {key: value for key, value in root.items() if key != "resource_config"}
    return hashlib.sha256(orjson.dumps(rest, option=orjson.OPT_SORT_KEYS)).hexdigest()
