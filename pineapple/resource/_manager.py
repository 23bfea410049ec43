"""The Manager: registers resources, loads them, refreshes them in the background.

It is assembled from one concept per module: the slots (``_slot``), the
refresh transaction (``_refresh``: fetch, validate, size, admit), the swap
table (``_swaps``: the pin, the memory budget, publish, rollback), the
schedule (``_backoff``, ``_scheduler``) and what a fetch ends in
(``_outcome``). This module holds registration, the life cycle and the read
side.

Life cycle: ``new`` --start()--> ``started`` --stop()--> ``stopped``.
``register`` and ``load_from_root_config`` are allowed only while ``new``.

Guarantees:
- ``get`` takes no manager-wide lock: the slot table is never mutated after
  ``start`` (registration is closed by then), and each slot's current value
  is borrowed through ``RefValue.acquire`` (see ``_refvalue``), which refuses
  a value whose count has reached zero. A reader that loses that race re-reads
  the slot, where the newer value is already published (the publisher swaps
  the pointer *before* dropping the old baseline reference).
- A refresh builds the new value completely on a refresh thread, publishes
  it under the slot lock, then drops the old value's baseline reference; the
  old value is closed by the closer thread after its last borrower releases.
- A failing fetch never removes or replaces the current value; it is
  recorded (redacted) in status and retried with capped exponential backoff.
  Any exception of a fetcher (``BaseException`` included) is such a failure,
  and a scheduled refresh always schedules the next one, so one resource's
  error never stops the refreshes of it or of any other resource. Should the
  scheduler's timer thread end anyway, ``halted_reason`` says why, every
  resource shows ``Fresh=False`` with that reason, and ``/readyz`` answers 503.
- Each slot's ``secrets`` is replaced once, in ``start`` under the state lock
  and before any fetch is submitted, by the union of all slots' secrets;
  after that it is only read (a frozenset: no reader sees a partial set).
- ``stop`` is idempotent: it first calls ``cancel()`` on every fetcher it
  owns that has one (stop the fetch in flight: kill a loader process, shut a
  connection down), then stops the scheduler (waiting for running fetches,
  which a cancel has made short), unpublishes every value and drops its
  baseline reference, closes the fetchers that have ``close()``, and waits for the closes it caused.
  A value still borrowed is closed only when its last borrower releases.
- Refresh safety: a new value is validated on the refresh thread, against a
  borrowed handle of the serving value, before anything is swapped. Then,
  under the swap table's lock (``SwapTable.lock``, one per manager; every
  change of a slot's current or previous value and size happens under it),
  the memory budget is checked
  against the sizes of every slot's current and previous values plus the
  retired values still borrowed, the pin is re-checked (a pin that landed
  during the fetch wins), and the value is published. So two resources
  refreshing at once cannot both fit a budget that only fits one, and a
  refused value is never seen by a reader: it is closed on the closer thread.
- A pinned resource is never swapped by a fetch: timed refreshes skip it and
  ``refresh`` raises :class:`PinnedError`; ``rollback`` swaps the kept previous
  value back under the swap table's lock and pins the resource. A second ``pin``
  raises :class:`PinnedError` (the first one's reason holds). A staged refresh
  (``fetch_candidate``) pins the resource under its refresh lock before it
  fetches, and a timed or admin fetch that waited for that lock re-checks the
  pin under it, so the candidate stays the one value its fetcher last fetched
  until ``admit_candidate`` (a swap as a refresh's, the pin lifted under the
  same lock) or ``refuse_candidate``.
- Two-phase fetchers (a supervisor publishing for its workers): a fetcher may
  define ``commit(value)``, called under the swap table's lock once ``value`` passed
  every check (validators, budget, pin) and just before it is served, and
  for the previous value a ``rollback`` brings back; if it raises nothing is
  swapped. ``discard(value)`` is called for a fetched value that is not
  served (refused, pinned meanwhile, commit failed, manager stopped). So
  nothing is published that this Manager does not serve.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from typing import Any, Literal

from .._errors import ConfigError, DuplicateRegistrationError, ManagerStateError, StartError
from ._backoff import Backoff
from ._budget import MemoryBudget, size_of
from ._closer import close_now, flush
from ._config import ResourceEntry, join_problems, parse_resource_entries, read_root_config
from ._hooks import call_hook
from ._instantiate import build_entry
from ._interval import MIN_INTERVAL, check_interval
from ._loaded import LoadedConfig
from ._outcome import ManagerMetrics, RefreshError, RefreshResult, UnknownResourceError
from ._redact import redact
from ._refresh import Refresher, carry_over, drop_unserved
from ._refusal import PinnedError
from ._refvalue import RefValue, ResourceHandle
from ._registry import DEFAULT_INTERVAL, Fetcher, Printer, Registry, default_registry
from ._scheduler import Scheduler
from ._slot import Slot
from ._status import ResourceStatus
from ._swaps import SwapTable, utc
from ._validate import ValidationSpec, Validator

__all__ = ["Manager"]

_log = logging.getLogger("pineapple.resource")


def _seconds(interval: float | timedelta) -> float:
    if isinstance(interval, timedelta):
        return interval.total_seconds()
    if isinstance(interval, bool) or not isinstance(interval, int | float):
        raise TypeError(f"interval must be seconds or a timedelta, got {type(interval).__name__}")
    return float(interval)


class Manager:
    """Holds named resources, refreshes them in the background, lends them by handle.

    >>> rm = Manager()
    >>> rm.register("greeting", lambda: {"hello": "world"}, interval=-1)
    >>> rm.start()
    >>> with rm.get("greeting") as value:
    ...     value["hello"]
    'world'
    >>> rm.stop()
    """

    def __init__(
        self,
        registry: Registry | None = None,
        metrics: ManagerMetrics | None = None,
        *,
        start_timeout: float = 60.0,
        jitter: float = 0.1,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        workers: int = 4,
        min_interval: float = MIN_INTERVAL,
        budget: MemoryBudget | None = None,
        interval_is_max: bool = False,
    ) -> None:
        """``jitter``: each refresh is due its interval ``± jitter`` of it (``interval_is_max``:
        ``- jitter`` only, so refreshes are at most the interval apart)."""
        self._registry = registry if registry is not None else default_registry()
        self._start_timeout = start_timeout
        self._backoff = Backoff(backoff_base, backoff_cap, jitter, early_only=interval_is_max)
        self._workers = workers
        self._min_interval = min_interval  # code may lower it (tests); a config cannot
        self._slots: dict[str, Slot] = {}
        self._entries: dict[str, ResourceEntry] = {}
        self._state: Literal["new", "started", "stopped"] = "new"
        self._state_lock = threading.Lock()
        self._scheduler: Scheduler | None = None
        # The memory budget (None limit: counted, not enforced); see "Guarantees:".
        self._swaps = SwapTable(
            self._slots,
            budget if budget is not None else MemoryBudget(),
            self._observe,
            lambda: self._state == "stopped",
        )
        self._refresher = Refresher(self._swaps, metrics, self.get, self._observe)

    # -- registration -------------------------------------------------------

    def register(
        self,
        name: str,
        fetcher: Fetcher,
        interval: float | timedelta = 0,
        *,
        type_name: str = "",
        printer: Printer | None = None,
        secrets: Iterable[str] = (),
        owns_fetcher: bool = True,
        carry_over: Manager | None = None,
        validate: ValidationSpec | Mapping[str, Any] | None = None,
        validator: Validator | None = None,
        keep_previous: bool = False,
    ) -> None:
        """Register ``fetcher`` under ``name``; ``interval`` seconds, 0 default, -1 never.

        ``owns_fetcher=False``: ``stop`` does not call the fetcher's ``close()``
        (for a fetcher object shared by successive managers, e.g. across
        config reloads). ``carry_over``: when that manager has ``name`` with
        this very fetcher object and the same interval, its current value is
        shared instead of fetched again at ``start``. ``validate`` (a
        ``ValidationSpec`` or a config ``validate`` block) and ``validator``
        (``validate(old, new)``) check every new value before the swap;
        ``keep_previous`` keeps the replaced value for :meth:`rollback`.
        """
        spec = validate if isinstance(validate, ValidationSpec) else None
        if spec is None:
            spec = ValidationSpec.parse(name, validate)
        slot = self._add_slot(
            Slot(
                name,
                fetcher,
                _seconds(interval),
                type_name=type_name,
                printer=printer,
                secrets=frozenset(secrets),
            )
        )
        slot.owns_fetcher = owns_fetcher
        _set_safety(slot, spec, validator, keep_previous)
        old = carry_over._slots.get(name) if carry_over is not None else None
        if old is not None and old.fetcher is fetcher and old.interval == slot.interval:
            self._adopt(slot, old)

    def _add_slot(self, slot: Slot) -> Slot:
        """Check ``slot`` (its interval as given: 0 becomes the default) and add it."""
        name = slot.name
        if not name:
            raise ConfigError("resource name must not be empty")
        if not callable(slot.fetcher):
            raise TypeError(f"resource {name!r}: fetcher must be callable")
        interval = check_interval(name, slot.interval, minimum=self._min_interval)
        slot.interval = DEFAULT_INTERVAL if interval == 0 else interval
        with self._state_lock:
            if self._state != "new":
                raise ManagerStateError(f"cannot register {name!r}: the manager is {self._state}")
            if name in self._slots:
                raise DuplicateRegistrationError(f"resource {name!r} is already registered")
            self._slots[name] = slot
        return slot

    def load_from_root_config(
        self,
        data: LoadedConfig | bytes | str | Mapping[str, Any],
        *,
        carry_over: Manager | None = None,
        env: Mapping[str, str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
    ) -> list[str]:
        """Register every entry of the config's ``resource_config``; returns their names.

        ``base_dir``: the config file's folder; relative file paths in params
        declared ``ParamSpec(path=True)`` (``json_file.path``,
        ``feed_data.sqlite_path``, ...) resolve against it.

        A missing or empty ``resource_config`` registers nothing. With
        ``carry_over``, an entry whose type, params and interval equal the one
        in that (running) manager shares its current value instead of being
        fetched again at ``start``; a changed entry gets the next generation.
        Errors are :class:`ConfigError` naming the resource; nothing is
        registered when any entry is bad. A :class:`LoadedConfig` is used as
        parsed (its entries, and its ``source_dir`` unless ``base_dir`` is
        given; ``env`` was applied when it was loaded).
        """
        if isinstance(data, LoadedConfig):
            if data.error is not None:
                raise data.error
            entries, problems = list(data.entries), list(data.problems)
            base_dir = data.source_dir if base_dir is None else base_dir
        else:
            entries, problems = parse_resource_entries(read_root_config(data), env)
        base = None if base_dir is None else os.path.abspath(base_dir)
        built = []
        for entry in entries:  # every entry, so that one error names every problem
            try:
                built.append(build_entry(self._registry, entry, base))
            except ConfigError as exc:
                problems.append(str(exc))
        if problems:
            raise ConfigError(join_problems(problems))
        for b in built:
            if b.entry.name in self._slots:
                raise DuplicateRegistrationError(f"resource {b.entry.name!r} is already registered")
        for b in built:
            entry = b.entry
            fingerprint = entry.fingerprint()
            old = carry_over._slots.get(entry.name) if carry_over is not None else None
            generation = 1 if old is None else old.generation
            if old is not None and old.fingerprint != fingerprint:
                generation, old = old.generation + 1, None  # changed: fetch it anew
            slot = self._add_slot(
                Slot(
                    entry.name,
                    b.fetcher,
                    entry.interval,
                    type_name=entry.type,
                    printer=b.printer,
                    secrets=frozenset(b.secrets),
                    fingerprint=fingerprint,
                    generation=generation,
                )
            )
            self._entries[entry.name] = entry
            _set_safety(slot, entry.validate, b.validator, entry.keep_previous)
            slot.replay = entry.replay
            if old is not None:
                self._adopt(slot, old)
        return [entry.name for entry in entries]

    def _adopt(self, slot: Slot, previous: Slot) -> None:
        """Share ``previous``'s current value with ``slot`` (see ``Slot.adopt``).

        A fetcher may define ``carry_over(value)``: it is called with the shared
        value so that the fetcher knows what is loaded (e.g. its version).
        """
        ref = slot.adopt(previous)
        if ref is None:
            return  # nothing loaded there: this manager fetches it at start
        # Let the new fetcher resume change detection (NOT_MODIFIED) from the
        # shared value instead of reloading everything on its first refresh.
        carry_over(slot, ref.value)

    # -- life cycle -----------------------------------------------------------

    def start(self, timeout: float | None = None, *, allow_partial: bool = False) -> None:
        """Fetch every resource once, synchronously, then refresh in the background.

        Fetches run in parallel, each bounded by ``timeout`` seconds (default:
        the manager's ``start_timeout``). If any fails, :class:`StartError`
        names each failed resource and why; unless ``allow_partial``, the
        manager is then stopped (nothing half-started is left behind). With
        ``allow_partial`` the failed resources keep being retried and the
        manager serves the rest. Raises :class:`ManagerStateError` if called twice.
        """
        with self._state_lock:
            if self._state != "new":
                raise ManagerStateError(f"cannot start: the manager is {self._state}")
            self._state = "started"
            self._scheduler = Scheduler(workers=self._workers)
            # Every slot masks every secret of this manager (one resource's
            # ${VAR} value may show in another's error); set before any fetch.
            secrets = self.secrets()
            for slot in self._slots.values():
                slot.secrets = secrets
        scheduler = self._scheduler
        limit = self._start_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        pending: list[tuple[Slot, Future[None] | None]] = []
        for slot in self._slots.values():
            if slot.carried_over:
                continue
            pending.append((slot, scheduler.submit(functools.partial(self._fetch, slot))))
        failures: dict[str, str] = {}
        for slot, future in pending:
            if future is None:
                failures[slot.name] = "the manager was stopped"
                continue
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                failures[slot.name] = f"first fetch timed out after {limit:g}s"
                continue
            except CancelledError:  # cancel() dropped it before it ran
                failures[slot.name] = "the manager was cancelled"
                continue
            if slot.current is None:
                failures[slot.name] = slot.last_error or "no value"
        if self.state == "stopped":  # cancel() ran meanwhile: nothing of this start serves
            failures = failures or dict.fromkeys(self._slots, "the manager was cancelled")
            raise StartError(_start_message(failures), failures)
        if failures and not allow_partial:
            # A timed-out fetch may still be running: do not wait for it. If it
            # completes later, it sees the stopped state and drops its value.
            self._stop(wait=False)
            raise StartError(_start_message(failures), failures)
        for slot in self._slots.values():
            self._schedule_next(slot, first=True)
        if failures:
            _log.warning("%s", _start_message(failures))

    def stop(self) -> None:
        """Stop refreshing and drop every baseline reference. Idempotent."""
        self._stop(wait=True)

    def cancel(self) -> None:
        """Stop now, from any thread, without waiting for a fetch in flight. Idempotent.

        Each fetch in flight is cancelled (its fetcher's ``cancel()``: a query is
        killed) and whatever it still returns is dropped; a :meth:`start` in
        progress raises :class:`StartError`, one not begun yet
        :class:`ManagerStateError`. For a shutdown that must not wait for a load.
        """
        self._stop(wait=False)

    def _stop(self, wait: bool) -> None:
        with self._state_lock:
            if self._state == "stopped":
                return
            self._state = "stopped"
            scheduler, self._scheduler = self._scheduler, None
        for slot in self._slots.values():
            if slot.owns_fetcher:
                _cancel_fetch(slot)
        if scheduler is not None:
            scheduler.stop(wait=wait)
        stopped_at = time.time()
        for slot in self._slots.values():
            self._swaps.unpublish(slot, stopped_at)
        for slot in self._slots.values():
            if slot.owns_fetcher:
                close_now(f"fetcher of {slot.label}", slot.fetcher)
        flush(timeout=30.0)

    @property
    def state(self) -> str:
        """``new``, ``started`` or ``stopped``."""
        return self._state

    # -- the read side ------------------------------------------------------------

    def get(self, name: str) -> ResourceHandle | None:
        """Borrow ``name``: a handle to release exactly once, or None.

        None means: unknown name, not loaded yet, or the manager is stopped.
        """
        slot = self._slots.get(name)
        if slot is None:
            return None
        ref = slot.current
        while ref is not None:
            handle = ref.borrow()
            if handle is not None:
                return handle
            ref = slot.current  # lost the race with a swap: the newer value is published
        return None

    def borrow_versioned(self, name: str) -> tuple[ResourceHandle, int] | None:
        """Borrow ``name`` with the version of the value borrowed (for traces); or None.

        Read under the slot's lock, so the version is the borrowed value's even
        while a refresh publishes a newer one. Slower than :meth:`get` (a lock
        per borrow): the engine asks for it only when a request wants its trace.
        """
        slot = self._slots.get(name)
        if slot is None:
            return None
        with slot.lock:  # publish() swaps current and bumps version under it
            ref = slot.current
            handle = None if ref is None else ref.borrow()
            return None if handle is None else (handle, slot.version)

    def version_of(self, name: str) -> int | None:
        """The version ``name`` serves now (0: nothing loaded yet); None for an unknown name."""
        slot = self._slots.get(name)
        return None if slot is None else slot.version

    def secrets(self) -> frozenset[str]:
        """Every secret of every resource: secret params, DSN passwords, ``${VAR}`` values."""
        return frozenset().union(*(slot.secrets for slot in self._slots.values()))

    def redact(self, text: str) -> str:
        """``text`` with DSN passwords and every secret of this manager masked."""
        return redact(text, self.secrets())

    def names(self) -> list[str]:
        """Registered resource names, sorted."""
        return sorted(self._slots)

    def entries(self) -> dict[str, ResourceEntry]:
        """The config entries loaded by ``load_from_root_config``, by name."""
        return dict(self._entries)

    @property
    def halted_reason(self) -> str | None:
        """Why background refreshing stopped although the manager is started; None while it runs."""
        scheduler = self._scheduler
        if self._state != "started" or scheduler is None:
            return None
        return scheduler.failure

    def status(self, now: float | None = None) -> list[ResourceStatus]:
        """The status of every resource, sorted by name, as of ``now`` (Unix time)."""
        stopped, halted = self._state == "stopped", self.halted_reason
        return [self._slots[n].snapshot_status(stopped, now, halted) for n in sorted(self._slots)]

    def status_of(self, name: str, now: float | None = None) -> ResourceStatus:
        """The status of one resource; :class:`UnknownResourceError` if unknown."""
        slot = self._slot(name)
        return slot.snapshot_status(self._state == "stopped", now, self.halted_reason)

    def describe(self, name: str) -> str | None:
        """The printer's description of the current value (None when not loaded)."""
        slot = self._slot(name)
        handle = self.get(name)
        if handle is None:
            return None
        with handle as value:
            try:
                return slot.redact(slot.printer.describe(value))
            except Exception as exc:
                return f"(describe failed: {type(exc).__name__})"

    def _slot(self, name: str) -> Slot:
        slot = self._slots.get(name)
        if slot is None:
            raise UnknownResourceError(f"unknown resource {name!r}")
        return slot

    # -- refreshing -----------------------------------------------------------------

    def refresh(self, name: str, *, force: bool = False) -> RefreshResult:
        """Fetch ``name`` now, on this thread (admin use); returns what happened.

        Raises :class:`RefreshError` (redacted, previous value kept) when the
        fetch fails, :class:`ValidationRefusedError` or
        :class:`MemoryBudgetExceededError` when the new value is refused
        (previous value kept), :class:`PinnedError` when the resource is
        pinned, :class:`UnknownResourceError` for an unknown name and
        :class:`ManagerStateError` unless the manager is started.

        ``force=True`` accepts a value the validators refuse (logged as a
        warning; the memory budget still applies) and first tells the
        fetcher what is served (``fetcher.carry_over(value)``), so a source
        whose refused state is unchanged is fetched again, not skipped.
        """
        slot = self._slot(name)
        if self._state != "started":
            raise ManagerStateError(f"cannot refresh {name!r}: the manager is {self._state}")
        pinned = slot.pinned
        if pinned is not None:
            raise PinnedError(name, pinned)
        if force:
            self._refresher.resume_from_current(slot)
        result = self._fetch(slot, force=force, unless_pinned=True)
        if result == "error":
            raise RefreshError(f"refresh of resource {name!r} failed: {slot.last_error}")
        if result == "refused":
            refused = slot.refused_error
            if refused is None:  # pragma: no cover - set together with the result
                raise RefreshError(f"refresh of resource {name!r} was refused")
            raise refused
        return result

    # -- a staged refresh (the server's shadow stage) ---------------------------------

    def fetch_candidate(self, name: str, hold: str) -> Any:
        """Fetch ``name`` now without swapping: ``NOT_MODIFIED``, or the new value,
        validated as a refresh's, with ``name`` pinned by ``hold`` (no fetch swaps it)
        until :meth:`admit_candidate` or :meth:`refuse_candidate`. The value is the
        caller's: it hands it to :meth:`admit_candidate` or :meth:`drop_candidate`.

        Raises what :meth:`refresh` raises (a refusal and a failed fetch are not
        recorded in the status: the caller answers them), nothing pinned then.
        """
        slot = self._slot(name)
        if self._state != "started":
            raise ManagerStateError(f"cannot stage {name!r}: the manager is {self._state}")
        return self._refresher.fetch_candidate(slot, hold)

    def admit_candidate(self, name: str, value: Any, hold: str) -> int | None:
        """Serve ``value`` (a :meth:`fetch_candidate`'s) as a refresh would swap it, once
        ``hold`` is lifted; the new version (None: the manager stopped). Raises what the
        swap raises (budget, another pin, ``commit``), ``value`` dropped then."""
        slot = self._slot(name)
        self._refresher.admit_candidate(slot, value, hold)
        return self.version_of(name)

    def refuse_candidate(self, name: str, hold: str, reason: str) -> None:
        """Lift ``hold`` and record the candidate's refusal (check ``stage``, ``Valid=False``):
        the unchanged source is not swapped in by the next fetch, a changed one is."""
        self._refresher.refuse_candidate(self._slot(name), hold, reason)

    def drop_candidate(self, name: str, value: Any) -> None:
        """A candidate value that is not served: its fetcher's ``discard``, then the closer."""
        drop_unserved(self._slot(name), value)

    def release_hold(self, name: str, hold: str) -> None:
        """Unpin ``name`` if ``hold`` pins it (a config reload carried the pin over)."""
        self._refresher.release_hold(self._slot(name), hold)

    # -- rollback, pin, memory (the swap table does the swapping) ------------------------

    def rollback(self, name: str) -> int:
        """Serve the kept previous value of ``name`` again, without a fetch; returns the
        new version. The value it replaces is dropped, and the resource is pinned
        (timed refreshes would otherwise bring the replaced data back) until
        :meth:`unpin`. :class:`NoPreviousValueError` when no previous value is kept.
        """
        slot = self._slot(name)
        if self._state != "started":
            raise ManagerStateError(f"cannot roll back {name!r}: the manager is {self._state}")
        version = self._swaps.roll_back(slot, time.time())
        _log.warning(
            "%s: rolled back to the previous value (version %d), pinned", slot.label, version
        )
        self._refresher.resume_from_current(slot)
        return version

    def set_replay(self, replay: Callable[[str, Any], None] | None) -> None:
        """Check each refreshed value of a ``replay`` entry with ``replay(name, value)``
        after its validators (not on a first load): what it raises refuses the value as a
        validator does (check ``replay``, ``Valid=False``, the previous value kept).
        Called by whoever serves requests from this Manager (the server), once, before
        ``start``; None: no check (a ``replay`` entry then swaps as any other)."""
        self._refresher.replay = replay

    def restore(self, name: str, value: Any, reason: str) -> int:
        """Serve ``value`` for ``name`` in place of the current one, without a fetch, and pin
        it with ``reason`` (a value an admin pinned before the process restarted); the new
        version. The validators do not run (the value served before); the memory budget
        and the fetcher's ``commit`` do. Raises :class:`MemoryBudgetExceededError` or what
        ``commit`` raised, with nothing swapped and the pin unchanged, and
        :class:`ManagerStateError` unless the manager is started.
        """
        slot = self._slot(name)
        if self._state != "started":
            raise ManagerStateError(f"cannot restore {name!r}: the manager is {self._state}")
        now = time.time()
        size = size_of(slot.printer, slot.label, value)
        ref = RefValue(value, slot.label)
        try:
            version = self._swaps.publish(
                slot, ref, size, now, upstream=False, forced=None, pin=reason
            )
        except BaseException:
            drop_unserved(slot, value)  # never published: closed on the closer thread
            raise
        if version is None:
            raise ManagerStateError(f"cannot restore {name!r}: the manager stopped")
        _log.warning("%s: restored as version %d, pinned (%s)", slot.label, version, reason)
        self._refresher.resume_from_current(slot)
        return version

    def pin(self, name: str, reason: str = "") -> None:
        """Hold the current value of ``name``: no fetch swaps it until :meth:`unpin`.

        :class:`PinnedError` when it is pinned already (the first pin and its reason hold).
        """
        slot = self._slot(name)
        now = time.time()
        why = reason or f"pinned by an admin at {utc(now)}"
        already = self._swaps.pin(slot, why, now)
        if already is not None:
            raise PinnedError(name, already)
        _log.warning("%s: pinned (%s)", slot.label, why)

    def unpin(self, name: str) -> bool:
        """Let timed and admin refreshes swap ``name`` again; False if it was not pinned."""
        slot = self._slot(name)
        was = self._swaps.unpin(slot, time.time())
        if was is not None:
            _log.warning("%s: unpinned", slot.label)
        return was is not None

    def memory(self) -> dict[str, Any]:
        """The memory budget in use: limit, bytes of current, previous and retired-but-
        borrowed values, and which resources have no known size."""
        return self._swaps.memory()

    def _observe(self, slot: Slot, now: float) -> None:
        """Date the conditions ``slot``'s change at ``now`` flipped (caller holds its lock)."""
        slot.observe(self._state == "stopped", now, self.halted_reason)

    def _fetch(
        self, slot: Slot, force: bool = False, *, unless_pinned: bool = False
    ) -> RefreshResult:
        """Fetch ``slot`` now, on this thread: the path of ``start``, the timer and ``refresh``
        (``unless_pinned``: :class:`PinnedError` when pinned once the refresh lock is held)."""
        return self._refresher.fetch(slot, force, unless_pinned=unless_pinned)

    def _next_delay(self, slot: Slot) -> float | None:
        """Seconds until ``slot``'s next fetch (see ``Backoff``); None: never."""
        return self._backoff.delay(slot)

    def _schedule_next(self, slot: Slot, first: bool = False) -> None:
        delay = self._next_delay(slot)
        if delay is None:
            return
        if first and slot.carried_over and slot.confirmed_at is not None:
            delay = max(0.0, delay - (time.time() - slot.confirmed_at))
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.call_later(delay, lambda: self._scheduled_refresh(slot))

    def _scheduled_refresh(self, slot: Slot) -> None:
        if self._state != "started":
            return
        try:
            if slot.pinned is None:  # a pinned resource is held: skip, check again next time
                with contextlib.suppress(PinnedError):  # pinned while it waited for the lock
                    self._fetch(slot, unless_pinned=True)
        finally:  # even when metrics or status code raised: the next refresh is due
            self._schedule_next(slot)

    def __repr__(self) -> str:
        return f"Manager({len(self._slots)} resources, {self._state})"


def _set_safety(
    slot: Slot, spec: ValidationSpec, validator: Validator | None, keep_previous: bool
) -> None:
    """Give a new slot (not visible to any thread yet) its validators and ``keep_previous``."""
    slot.validation = spec
    slot.validator = validator
    slot.keep_previous = keep_previous


def _cancel_fetch(slot: Slot) -> None:
    """Call the fetcher's optional ``cancel()``: its fetch in flight ends now."""
    call_hook(slot.fetcher, "cancel", label=slot.label, redact=slot.redact)


def _start_message(failures: Mapping[str, str]) -> str:
    parts = "; ".join(f"{name!r}: {why}" for name, why in sorted(failures.items()))
    return f"{len(failures)} resource(s) failed to load: {parts}"
