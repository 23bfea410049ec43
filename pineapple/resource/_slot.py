"""One registered resource inside a Manager: its fetcher, current value and history.

Guarantees:
- ``current`` is replaced only under ``lock`` and only by publishing a fully
  built ``RefValue`` first and then releasing the old one's baseline
  reference, so a reader either borrows the old value (kept alive by its own
  reference) or the new one; it never sees a half-built value.
- ``refresh_lock`` serialises fetches of this resource: a scheduled refresh
  and an admin refresh never run the fetcher concurrently.
- ``previous`` (kept only with ``keep_previous``) holds its own baseline
  reference, taken over from ``current`` by :meth:`shelve` under ``lock``; it
  is never borrowed by readers, only swapped back by a rollback.
- ``pinned``, ``refusal`` and the sizes are written under ``lock`` (sizes
  also only under the Manager's swap-table lock (``_swaps.SwapTable.lock``),
  which its budget check holds).
- Status fields are written under ``lock``. The conditions are derived under
  the same lock by :meth:`observe`, which the Manager calls at every change
  (a swap, a failure, a refusal, a pin, a stop) with the moment of that
  change, and again by ``snapshot_status`` on every read. A condition's
  transition time moves only when its status flips, and then to the moment
  of the change, never to the time of a read: an event's own time, or for
  ``Fresh=False/Stale`` (which no event causes) the moment the value's age
  passed twice the interval.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .._error_text import capped
from ._probe import ProbeReport, probe_report_of
from ._redact import redact
from ._refusal import ValueRefusedError
from ._refvalue import RefValue
from ._registry import Fetcher, JSONPrinter, Printer
from ._status import Condition, ConditionStatus, ResourceStatus, SourceReport, source_report_of
from ._validate import ValidationSpec, Validator

__all__ = ["Slot"]


class Slot:
    """The state of one resource of one Manager."""

    def __init__(
        self,
        name: str,
        fetcher: Fetcher,
        interval: float,
        *,
        type_name: str,
        printer: Printer | None,
        secrets: frozenset[str],
        fingerprint: str | None = None,
        generation: int = 1,
    ) -> None:
        self.name = name
        self.fetcher = fetcher
        self.interval = interval  # seconds; -1: never refresh
        self.type_name = type_name
        self.printer: Printer = printer or JSONPrinter(type_name, name)
        self.secrets = secrets
        self.fingerprint = fingerprint
        self.lock = threading.Lock()
        self.refresh_lock = threading.Lock()
        self.current: RefValue | None = None
        self.version = 0
        self.generation = generation
        self.loaded_at: float | None = None
        self.confirmed_at: float | None = None  # last swap or NOT_MODIFIED
        self.last_attempt_at: float | None = None
        self.last_error: str | None = None
        self.consecutive_failures = 0
        self.carried_over = False
        self.owns_fetcher = True  # stop() closes the fetcher
        self._conditions: dict[str, Condition] = {}
        # Refresh safety (validators, rollback, pin, memory budget):
        self.validation = ValidationSpec()
        self.validator: Validator | None = None  # the resource type's own hook
        self.keep_previous = False
        self.replay = False  # the entry's ``replay``: Refresher.replay checks new values
        self.previous: RefValue | None = None
        self.current_size: int | None = None
        self.previous_size: int | None = None
        self.refusal: str | None = None  # why the latest new value was refused
        self.refused_error: ValueRefusedError | None = None  # the same, as an error (redacted)
        self.forced: str | None = None  # the refusal a forced refresh overrode
        self.pinned: str | None = None  # why the resource is pinned (None: not pinned)

    @property
    def label(self) -> str:
        return f"{self.type_name or 'resource'}/{self.name}"

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def said(self, text: str) -> str:
        """``text`` redacted and cut to ``MAX_ERROR_BYTES``: what a status says of this
        resource (an error, a refusal, a probe's message, a summary) is bounded."""
        return capped(self.redact(text))

    def publish(self, ref: RefValue, now: float) -> RefValue | None:
        """Swap ``ref`` in (caller holds ``lock``); returns the value it replaced."""
        old = self.current
        self.current = ref
        self.version += 1
        self.loaded_at = self.confirmed_at = self.last_attempt_at = now
        self.last_error = None
        self.consecutive_failures = 0
        return old

    def shelve(
        self, old: RefValue | None, old_size: int | None
    ) -> tuple[RefValue, int | None] | None:
        """After a swap (caller holds ``lock``): keep ``old`` as ``previous`` when
        ``keep_previous``; returns the value to retire (the replaced previous,
        or ``old`` itself) with its size, or None.
        """
        if not self.keep_previous:
            return None if old is None else (old, old_size)
        dropped = None if self.previous is None else (self.previous, self.previous_size)
        self.previous, self.previous_size = old, old_size
        return dropped

    def adopt(self, previous: Slot) -> RefValue | None:
        """Share ``previous``'s current value (one more baseline reference), with
        its version, times, size and pin (and its kept previous value, when this
        slot keeps one too); returns it, or None when ``previous`` has none.

        Called before ``start``, on a slot no reader can see yet.
        """
        with previous.lock:
            ref = previous.current
            if ref is None or not ref.acquire():
                return None
            kept = previous.previous if self.keep_previous else None
            if kept is not None and not kept.acquire():
                kept = None
            with self.lock:
                self.current = ref
                self.current_size = previous.current_size
                if kept is not None:
                    self.previous, self.previous_size = kept, previous.previous_size
                self.pinned = previous.pinned
                self.refusal, self.forced = previous.refusal, previous.forced
                self.refused_error = previous.refused_error
                self.version = previous.version
                self.loaded_at = previous.loaded_at
                self.confirmed_at = previous.confirmed_at
                self.last_attempt_at = previous.last_attempt_at
                self._conditions = dict(previous._conditions)  # their times carry over too
                self.carried_over = True
        return ref

    def unpublish(self) -> RefValue | None:
        """Take the current value out (caller holds ``lock``); returns it."""
        old, self.current = self.current, None
        return old

    def unpublish_previous(self) -> RefValue | None:
        """Take the kept previous value out (caller holds ``lock``); returns it."""
        old, self.previous, self.previous_size = self.previous, None, None
        return old

    def _flip(
        self, type_: str, status: ConditionStatus, reason: str, message: str, at: float
    ) -> Condition:
        """The condition ``type_`` now; its transition time is ``at`` if its status flips."""
        prev = self._conditions.get(type_)
        when = prev.last_transition_time if prev and prev.status == status else at
        cond = Condition(type_, status, reason, message, when)
        self._conditions[type_] = cond
        return cond

    def _ready(self, stopped: bool, at: float) -> Condition:
        if stopped:
            return self._flip("Ready", "False", "Stopped", "the manager is stopped", at)
        if self.current is not None:
            return self._flip("Ready", "True", "Loaded", f"version {self.version} is served", at)
        if self.last_error is not None:
            return self._flip("Ready", "False", "FetchFailed", self.last_error, at)
        return self._flip("Ready", "Unknown", "NotLoaded", "no fetch has completed yet", at)

    def _fresh(self, now: float, halted: str | None, source: SourceReport | None) -> Condition:
        if halted is not None:
            return self._flip("Fresh", "False", "RefreshStopped", halted, now)
        if self.current is None or self.confirmed_at is None:
            return self._flip("Fresh", "Unknown", "NotLoaded", "no value loaded", now)
        if source is not None and source.stale is not None:
            reason, message = source.stale
            since = now if source.stale_since is None else source.stale_since
            return self._flip("Fresh", "False", reason, self.redact(message), since)
        if self.interval < 0:
            return self._flip("Fresh", "True", "NeverRefreshed", "interval -1: loaded once", now)
        age = now - self.confirmed_at
        if age > 2 * self.interval:
            msg = f"value is {age:.0f}s old, over twice the {self.interval:g}s interval"
            if self.last_error:
                msg += f"; last error: {self.last_error}"
            # Stale since the moment the age passed the limit, whenever this is read.
            became = self.confirmed_at + 2 * self.interval
            return self._flip("Fresh", "False", "Stale", msg, became)
        return self._flip("Fresh", "True", "UpToDate", f"confirmed {age:.0f}s ago", now)

    def _reachable(self, report: ProbeReport, read_at: float) -> Condition:
        # The probe that saw the change is the nearest moment known (a read may be later).
        at = report.checked_at if report.checked_at is not None else read_at
        if report.up is None:
            return self._flip("Reachable", "Unknown", "NotProbed", report.message, at)
        if report.up:
            return self._flip("Reachable", "True", "ProbeSucceeded", report.message, at)
        return self._flip("Reachable", "False", "ProbeFailed", self.said(report.message), at)

    def _valid(self, at: float) -> Condition:
        if self.refusal is not None:
            return self._flip("Valid", "False", "Refused", self.refusal, at)
        if self.current is None:
            return self._flip("Valid", "Unknown", "NotLoaded", "no value accepted yet", at)
        if self.forced is not None:
            forced = f"accepted by force: {self.forced}"
            return self._flip("Valid", "True", "Forced", forced, at)
        if self.validation.empty and self.validator is None:
            return self._flip("Valid", "True", "NoValidators", "no validator configured", at)
        return self._flip("Valid", "True", "Passed", f"version {self.version} passed", at)

    def _pinned(self, at: float) -> Condition:
        if self.pinned is not None:
            return self._flip("Pinned", "True", "Pinned", self.pinned, at)
        return self._flip("Pinned", "False", "NotPinned", "refreshed on schedule", at)

    def _derive(
        self, stopped: bool, now: float, halted: str | None, source: SourceReport | None = None
    ) -> tuple[Condition, ...]:
        """Every condition as of ``now`` (caller holds ``lock``); a flip is dated ``now``."""
        return (
            self._ready(stopped, now),
            self._fresh(now, halted, source),
            self._valid(now),
            self._pinned(now),
        )

    def observe(self, stopped: bool, now: float, halted: str | None = None) -> None:
        """Record the conditions right after a change made at ``now`` (caller holds ``lock``).

        The Manager calls it at every change of what the conditions read, so a
        flip carries the time of its change, not of the first read after it.
        """
        self._derive(stopped, now, halted, source_report_of(self.fetcher))

    def snapshot_status(
        self, stopped: bool, now: float | None = None, halted: str | None = None
    ) -> ResourceStatus:
        """The status as of ``now``; ``halted``: why background refreshes stopped."""
        now = time.time() if now is None else now
        source = source_report_of(self.fetcher)
        with self.lock:
            # Every change already recorded its flips (``observe``); what is left to
            # flip here is what time alone changes (Stale, dated by itself), a probe,
            # or the fetcher's word on its source.
            conditions = self._derive(stopped, now, halted, source)
            summary = ""
            ref = self.current
            if ref is not None:
                summary = self.summary_of(ref.value)
                report = probe_report_of(ref.value)
                if report is not None and not stopped:
                    conditions += (self._reachable(report, now),)
            return ResourceStatus(
                name=self.name,
                type=self.type_name,
                interval=self.interval,
                version=self.version,
                generation=self.generation,
                loaded_at=self.loaded_at,
                last_attempt_at=self.last_attempt_at,
                last_error=self.last_error,
                consecutive_failures=self.consecutive_failures,
                conditions=conditions,
                summary=summary,
                size_bytes=self.current_size,
                previous_size_bytes=self.previous_size,
                has_previous=self.previous is not None,
                source=None if source is None else source.source,
                source_detail=None if source is None else dict(source.detail),
            )

    def summary_of(self, value: Any) -> str:
        """The printer's summary of ``value``, redacted (never raises)."""
        try:
            return self.said(self.printer.summarize(value))
        except Exception as exc:  # a printer bug must not break status output
            return f"(summary failed: {type(exc).__name__})"
