"""The refresh transaction: fetch, validate, size, admit and swap one new value.

One attempt runs on a refresh thread (or an admin's thread) under the slot's
``refresh_lock``: the fetcher is called; ``NOT_MODIFIED`` confirms the
current value, unless the latest new value was refused: then the source still
holds the refused data and the refusal stands (``Valid=False``, no
"recovered") until a value is accepted; a new value is validated against a borrowed handle of the
serving one, sized by the type's printer and handed to the
:class:`~._swaps.SwapTable`, which checks the pin and the budget and
publishes it. Every way out is recorded in the slot's status (secrets
masked) and returned as a :data:`RefreshResult`; a value that is not served
goes to the fetcher's ``discard`` hook and then to the closer, never to a
reader. Any exception of a fetcher (``BaseException`` included) is a failed
fetch, never an error of the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ._budget import size_of
from ._closer import schedule_close
from ._hooks import admitted_upstream, call_hook, hook_of
from ._outcome import NOT_MODIFIED, ManagerMetrics, RefreshError, RefreshResult
from ._refusal import PinnedError, ValidationRefusedError, ValueRefusedError
from ._refvalue import RefValue, ResourceHandle
from ._slot import Slot
from ._swaps import SwapTable
from ._validate import run_validators

__all__ = ["Refresher", "drop_unserved"]

_log = logging.getLogger("pineapple.resource")


class Refresher:
    """Runs fetches for one Manager.

    ``get(name)`` borrows a serving value (the Manager's ``get``);
    ``observe(slot, now)`` dates the conditions a change flipped (caller
    holds the slot's lock).
    """

    def __init__(
        self,
        swaps: SwapTable,
        metrics: ManagerMetrics | None,
        get: Callable[[str], ResourceHandle | None],
        observe: Callable[[Slot, float], None],
    ) -> None:
        self._swaps = swaps
        self._metrics = metrics
        self.get = get
        self._observe = observe
        self.replay: Callable[[str, Any], None] | None = None
        """``replay(name, value)``: what a value of a ``replay`` entry answers before it is
        swapped in (``Manager.set_replay``); raises with a reason to refuse it."""

    def fetch(
        self, slot: Slot, force: bool = False, *, unless_pinned: bool = False
    ) -> RefreshResult:
        """Fetch ``slot`` now, on this thread: one attempt, reported to the metrics.

        ``unless_pinned``: :class:`PinnedError` when ``slot`` is pinned once the refresh
        lock is held (a pin that landed while this fetch waited for it: a staged
        refresh's, whose fetched value must stay the one its fetcher holds)."""
        with slot.refresh_lock:
            pinned = slot.pinned
            if unless_pinned and pinned is not None:
                raise PinnedError(slot.name, pinned)
            started = time.monotonic()
            result = self._fetch_locked(slot, force)
            if self._metrics is not None:
                elapsed = time.monotonic() - started
                self._metrics.observe_refresh(slot.name, slot.type_name, result, elapsed)
            return result

    def _fetch_locked(self, slot: Slot, force: bool = False) -> RefreshResult:
        failing = slot.consecutive_failures  # a fetch (under refresh_lock, held) changes it
        result = self._attempt(slot, force)
        if failing and result in ("swapped", "not_modified") and not slot.consecutive_failures:
            _log.info(
                "%s: recovered after %d failed refresh(es)",
                slot.label,
                failing,
                extra={"resource": slot.name, "failures": failing},
            )
        return result

    def _attempt(self, slot: Slot, force: bool) -> RefreshResult:
        now = time.time()
        try:
            value = slot.fetcher()
        except BaseException as exc:  # SystemExit & co. from a fetcher: a failed fetch too
            return self._record_failure(slot, now, f"{type(exc).__name__}: {exc}")
        if value is NOT_MODIFIED:
            with slot.lock:
                if slot.current is None:
                    message = "fetcher returned NOT_MODIFIED but no value is loaded"
                elif slot.refused_error is not None:
                    refusal = self._still_refused(slot, now)
                    message = None
                else:
                    slot.confirmed_at = slot.last_attempt_at = now
                    slot.last_error = None
                    slot.consecutive_failures = 0
                    self._observe(slot, now)
                    return "not_modified"
            if message is None:  # logged outside the slot's lock
                _log.info(
                    "refresh of %s: the source still holds the refused data (Valid=False): %s",
                    slot.label,
                    refusal,
                    extra={"resource": slot.name, "failures": slot.consecutive_failures},
                )
                return "refused"
            return self._record_failure(slot, now, message)
        try:
            self._admit(slot, value, now, force)
        except ValueRefusedError as exc:
            drop_unserved(slot, value)  # never published: closed on the closer thread
            return self._record_refusal(slot, now, exc)
        except PinnedError as exc:
            drop_unserved(slot, value)
            _log.info("%s: fetched value dropped: %s", slot.label, exc)
            return "not_modified"
        except Exception as exc:  # the fetcher's commit hook failed: nothing swapped
            drop_unserved(slot, value)
            return self._record_failure(slot, now, f"{type(exc).__name__}: {exc}")
        return "swapped"

    # -- a staged refresh: fetched now, swapped (or refused) later ---------------------

    def fetch_candidate(self, slot: Slot, hold: str) -> Any:
        """One fetch of ``slot`` that swaps nothing (a staged refresh, ``Manager.stage``):
        ``NOT_MODIFIED`` as is; else the value, validated as a refresh's (the replay
        included), with ``slot`` pinned by ``hold`` so no fetch swaps it meanwhile.

        Raises :class:`PinnedError` (pinned already), ``RefreshError`` (the fetch
        failed) or :class:`ValueRefusedError` (the value is dropped); nothing is pinned
        then. Not recorded in the slot's status: the caller answers it.
        """
        with slot.refresh_lock:  # no timed fetch of this slot runs meanwhile
            if self._swaps.pin(slot, hold, time.time()) is not None:
                raise PinnedError(slot.name, str(slot.pinned))
            try:
                value = slot.fetcher()
            except BaseException as exc:  # SystemExit & co. from a fetcher: a failed fetch
                self._swaps.unpin(slot, time.time())
                reason = slot.said(f"{type(exc).__name__}: {exc}")
                raise RefreshError(f"refresh of resource {slot.name!r} failed: {reason}") from None
            if value is NOT_MODIFIED:
                self._swaps.unpin(slot, time.time())
                return value
            try:
                if not admitted_upstream(slot.fetcher):
                    self._validate(slot, value, False)
            except BaseException:
                self._swaps.unpin(slot, time.time())
                drop_unserved(slot, value)
                raise
            return value

    def admit_candidate(self, slot: Slot, value: Any, hold: str) -> None:
        """Swap in ``value`` (a :meth:`fetch_candidate`'s, validated then) exactly as a
        refresh would, once ``hold`` is lifted; raises what the swap raises (the budget,
        a pin other than ``hold``, the fetcher's ``commit``), the value dropped then."""
        with slot.refresh_lock:
            self.release_hold(slot, hold)
            now = time.time()
            try:
                self._admit(slot, value, now, False, validated=True)
            except BaseException:
                drop_unserved(slot, value)
                raise
            with slot.lock:
                slot.last_attempt_at = slot.confirmed_at = now
                slot.last_error = None
                slot.consecutive_failures = 0
                self._observe(slot, now)

    def refuse_candidate(self, slot: Slot, hold: str, reason: str) -> None:
        """``hold`` lifted and the candidate refused (check ``stage``, ``Valid=False``), so
        the source's unchanged data (``NOT_MODIFIED``) is not swapped in by the next fetch;
        the caller drops the value (:func:`drop_unserved`) once nothing borrows it."""
        with slot.refresh_lock:
            self.release_hold(slot, hold)
            refused = ValidationRefusedError(slot.name, "stage", reason)
            self._record_refusal(slot, time.time(), refused)

    def release_hold(self, slot: Slot, hold: str) -> None:
        """Unpin ``slot`` if ``hold`` pins it (an admin's pin stays)."""
        self._swaps.unpin(slot, time.time(), only=hold)

    def _admit(
        self, slot: Slot, value: Any, now: float, force: bool, *, validated: bool = False
    ) -> None:
        """Validate ``value``, size it, check the budget and the pin, swap it in.

        Raises :class:`ValueRefusedError` (nothing swapped) or
        :class:`PinnedError` (pinned during the fetch: nothing swapped), or
        what the fetcher's ``commit`` raised (nothing swapped).

        A fetcher whose ``admitted_upstream`` is True serves values another
        process already validated and fitted in its budget (a worker mapping
        what its supervisor published): they are neither validated nor refused
        by the budget here, only counted.
        """
        upstream = admitted_upstream(slot.fetcher)
        forced = None if upstream or validated else self._validate(slot, value, force)
        size = size_of(slot.printer, slot.label, value)
        summary = slot.summary_of(value)  # before the swap: after it a rollback may retire it
        ref = RefValue(value, slot.label)
        version = self._swaps.publish(slot, ref, size, now, upstream=upstream, forced=forced)
        if version is not None:
            _log.info(
                "%s: swapped in version %d: %s",
                slot.label,
                version,
                summary,
                extra={"resource": slot.name, "version": version, "summary": summary},
            )

    def _validate(self, slot: Slot, value: Any, force: bool) -> str | None:
        """Run the slot's validators on ``value`` against the serving value.

        Returns None when it passes; with ``force``, the refusal it overrode
        (logged); raises :class:`ValidationRefusedError` otherwise.
        """
        replay = self.replay if slot.replay else None
        if slot.validation.empty and slot.validator is None and replay is None:
            return None
        handle = self.get(slot.name)  # the serving value stays alive while we compare
        try:
            old = handle.value if handle is not None else None
            run_validators(slot.name, slot.validation, slot.validator, old, value)
            if replay is not None and old is not None:  # a first load has nothing to replay
                try:
                    replay(slot.name, value)
                except Exception as exc:
                    reason = str(exc) or type(exc).__name__
                    raise ValidationRefusedError(slot.name, "replay", reason) from None
        except ValidationRefusedError as exc:
            if not force:
                raise
            reason = slot.said(str(exc))
            _log.warning(
                "%s: refresh forced by an admin, validators overridden: %s", slot.label, reason
            )
            return reason
        finally:
            if handle is not None:
                handle.release()
        return None

    def _record_refusal(self, slot: Slot, now: float, exc: ValueRefusedError) -> RefreshResult:
        with slot.lock:
            refused = type(exc)(
                slot.name, exc.check, slot.said(exc.reason), serving=slot.current is not None
            )
            message = str(refused)
            slot.last_attempt_at = now
            slot.last_error = message
            slot.consecutive_failures += 1
            slot.refusal, slot.refused_error = message, refused
            self._observe(slot, now)
        _log.warning("refresh of %s refused (Valid=False): %s", slot.label, message)
        observe = hook_of(self._metrics, "observe_refusal")
        if observe is not None:
            observe(slot.name, slot.type_name, exc.check)
        return "refused"

    def _still_refused(self, slot: Slot, now: float) -> str | None:
        """``NOT_MODIFIED`` after a refusal (caller holds ``slot.lock``): the source still
        holds the data that was refused, so nothing was accepted. The refusal stands
        (``Valid=False``, ``last_error``), the serving value is not confirmed (``Fresh``
        ages from its last confirmation) and the attempt counts as one more failure in a
        row (the next one backs off, at most the interval), until a value is accepted
        (a swap), forced or rolled back. Not counted as a new refusal: no validator ran."""
        slot.last_attempt_at = now
        slot.consecutive_failures += 1
        self._observe(slot, now)
        return slot.refusal

    def resume_from_current(self, slot: Slot) -> None:
        """Tell the fetcher which value is served (``fetcher.carry_over``), so that its
        change detection compares with it (after a refusal or a rollback)."""
        if hook_of(slot.fetcher, "carry_over") is None:
            return
        handle = self.get(slot.name)
        if handle is None:
            return
        with handle as value:
            carry_over(slot, value)

    def _record_failure(self, slot: Slot, now: float, reason: str) -> RefreshResult:
        message = slot.said(reason)
        with slot.lock:
            slot.last_attempt_at = now
            slot.last_error = message
            slot.consecutive_failures += 1
            failures = slot.consecutive_failures
            self._observe(slot, now)
        kept = "keeping the previous value" if slot.current is not None else "no value loaded"
        _log.warning(
            "refresh of %s failed (%d in a row, %s): %s", slot.label, failures, kept, message
        )
        return "error"


def drop_unserved(slot: Slot, value: Any) -> None:
    """A fetched value that is not served: the fetcher's ``discard`` hook, then the closer."""
    call_hook(slot.fetcher, "discard", value, label=slot.label, redact=slot.redact)
    schedule_close(slot.label, value)


def carry_over(slot: Slot, value: Any) -> None:
    """Tell ``slot``'s fetcher that ``value`` serves without its having fetched it (its
    ``carry_over`` hook): a config reload carried it over, or a refusal or a rollback kept
    it. The one place that calls the hook; its failure is logged."""
    call_hook(slot.fetcher, "carry_over", value, label=slot.label, redact=slot.redact)
