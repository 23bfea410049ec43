"""Stage, then promote: a candidate config serves as a shadow until it is promoted or aborted.

``POST /admin/reload?stage=1`` (``pineapple admin stage``) reads, builds and
warms the config as a reload does (the warm-up replay included), but keeps
the candidate as a shadow (``server/_shadow.py``) instead of swapping it in.
``POST /admin/config/promote`` swaps it in exactly as a reload would (the
outcome's trigger, and the history's, is ``promote``);
``POST /admin/config/abort`` retires it (its resources closed once its last
shadowed request ends). With ``min_requests`` named at stage time the
decision is automatic (:class:`~server._shadow_summary.Thresholds`). The
decision, who made it and why are kept (``last_decision``) and shown by
``GET /config/candidate`` and ``GET /config``.

The rules:
- One candidate at a time: staging while one is staged is refused (409).
- Bytes equal to what serves are not staged (409).
- While staged, the watcher and the poll leave the staged bytes alone (the
  policy's ``staged``); any other reload that swaps a config in (a new file
  edit, SIGHUP, ``/admin/reload``, a rollback) aborts the stage first,
  ``superseded``: a candidate is compared against the config it was built
  beside, or not at all.
- An aborted candidate's bytes are not applied by the watcher or the poll
  again (the policy's ``refuse_again``), until the file changes.
- A stage older than ``--shadow-max-seconds`` is aborted (``lifetime``).

A staged refresh (``POST /admin/resources/{name}/refresh?stage=1``) stages
one resource's fetched value instead, lent beside the serving snapshot
(``server/_resource_stage.py``): the same shadow, thresholds, lifetime and
routes; a promote swaps the value in as a refresh would, an abort refuses it.
One stage of either kind at a time (409 naming the one staged).

This module is one process's (:class:`LocalStage`); under ``--workers N`` the
supervisor holds the stage and each worker shadows its share.

Guarantees:
- Stage, promote and abort run under the reload policy's lock
  (:meth:`~server._reload_policy.ReloadPolicy.exclusive`), so none of them
  races a reload or another; the superseding listener runs under it too
  (the policy calls its listeners while the reload holds it).
- A promoted candidate is the stage's own snapshot, swapped in with its
  baseline reference; an aborted one is retired once, by whoever ended the
  stage (:meth:`~server._shadow.Shadow.end` hands it to one caller).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from pineapple import PineappleError, resource
from pineapple._error_text import capped

from ._build_error import BuildError
from ._config import Config
from ._decisions import Refused, act_refused
from ._reload_policy import ReloadOutcome
from ._reloader import Reloader
from ._resource_stage import LentCandidate, hold
from ._shadow import Shadow, Stage
from ._shadow_summary import Decision, ShadowSummary, ThresholdError, Thresholds
from ._snapshot import Snapshot, SnapshotHolder

__all__ = [
    "ABORT_WAIT_SECONDS",
    "LocalStage",
    "StageDecisions",
    "parse_share",
    "stage_refused",
    "stage_settings",
    "staged_refusal",
]

_log = logging.getLogger("pineapple.server")

ABORT_WAIT_SECONDS = 10.0
"""How long an abort waits for the candidate's resources to close before it answers."""


class StageDecisions(Protocol):
    """What the stage routes ask (one process: :class:`LocalStage`). Blocking: off the loop."""

    def stage(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Build and stage the config (``given``: ``share`` and the thresholds)."""
        ...

    def promote(self) -> dict[str, Any]:
        """Swap the staged candidate in; :class:`Refused` (404) when none is staged."""
        ...

    def abort(self) -> dict[str, Any]:
        """Drop the staged candidate; :class:`Refused` (404) when none is staged."""
        ...

    def candidate(self) -> dict[str, Any]:
        """``GET /config/candidate``: ``staged`` (the summary, or None) and ``last_decision``."""
        ...

    def stage_resource(self, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """Fetch ``name`` and stage its value (``given`` as :meth:`stage`'s)."""
        ...


def parse_share(given: Mapping[str, Any], default: float) -> float:
    """The stage's ``share`` (0 to 1), else ``default``; :class:`ThresholdError` naming it."""
    raw = given.get("share")
    if raw is None or raw == "":
        return default
    try:
        share = float(raw)
    except (TypeError, ValueError):
        raise ThresholdError(f"share must be a number, not {str(raw)[:64]!r}") from None
    if not 0.0 <= share <= 1.0:
        raise ThresholdError("share must be between 0 and 1")
    return share


def stage_settings(given: Mapping[str, Any], default_share: float) -> tuple[Thresholds, float]:
    """A stage's thresholds and share from ``given``; :class:`Refused` (400) naming what is
    wrong (both process models' stages read them so)."""
    try:
        return Thresholds.parse(given), parse_share(given, default_share)
    except ThresholdError as exc:
        raise Refused(400, str(exc)) from None


def staged_refusal(resource_name: str | None, content_hash: str) -> Refused:
    """The 409 of a stage asked while another is staged, naming the one staged."""
    if resource_name is not None:
        what = f"a refresh of resource {resource_name!r}"
    else:
        what = f"config {content_hash[:12]}"
    return Refused(409, f"{what} is staged: promote or abort it first")


class LocalStage:
    """:class:`StageDecisions` of one process: its reloader's policy and its shadow."""

    def __init__(
        self, config: Config, reloader: Reloader, shadow: Shadow, holder: SnapshotHolder
    ) -> None:
        self._config = config
        self._holder = holder
        self._policy = reloader.policy
        self._target = reloader.target
        self._shadow = shadow
        self.last_decision: dict[str, Any] | None = None
        """The last stage's end: ``decision``, ``by``, ``reason``, ``revision``, ``summary``."""
        shadow.decide = self._decide
        reloader.listeners.append(self._superseded)

    # -- the routes -----------------------------------------------------------------------

    def stage(self, given: Mapping[str, Any]) -> dict[str, Any]:
        thresholds, share = stage_settings(given, self._config.shadow_share)
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            if self._target.closed:
                raise Refused(503, "shutting down")
            self._refuse_if_staged()
            try:
                data = self._target.read()
                digest = hashlib.sha256(data).hexdigest()
                served = self._policy.served
                if served is not None and served[0] == digest:
                    raise Refused(409, f"config {digest[:12]} serves already: nothing to stage")
                snap = self._target.prepare(self._target.check(data))
            except Refused:
                raise
            except Exception as exc:  # nothing is staged; what serves is untouched
                return stage_refused(exc)
            if snap is None:
                raise Refused(503, "shutting down")
            stage = Stage(
                snap,
                digest,
                share,
                thresholds,
                ShadowSummary(self._config.shadow_examples),
                expires=time.monotonic() + self._config.shadow_max_seconds,
            )
            self._shadow.begin(stage)
            self._policy.staged = digest
        _log.info(
            "config %s staged: %g of /execute requests shadowed (snapshot %d)",
            digest[:12],
            share,
            snap.serial,
        )
        return {
            "result": "staged",
            "candidate": self._view(stage),
            "report": self._target.replay_report,
        }

    def stage_resource(self, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
        thresholds, share = stage_settings(given, self._config.shadow_share)
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            if self._target.closed:
                raise Refused(503, "shutting down")
            self._refuse_if_staged()
            serving = self._holder.acquire()
            if serving is None:
                raise Refused(503, "no config is being served")
            try:
                candidate = self._fetched(serving, name)
            except BaseException:
                serving.release()
                raise
            stage = Stage(
                candidate,
                serving.info.content_hash,
                share,
                thresholds,
                ShadowSummary(self._config.shadow_examples),
                expires=time.monotonic() + self._config.shadow_max_seconds,
                resource=name,
            )
            self._shadow.begin(stage)
        _log.info(
            "resource %r staged (a refresh beside version %s): %g of /execute requests shadowed",
            name,
            candidate.version,
            share,
        )
        return {"result": "staged", "candidate": self._view(stage)}

    def _fetched(self, serving: Snapshot, name: str) -> LentCandidate:
        """A new value of ``name`` in ``serving``'s Manager, pinned by the stage; :class:`Refused`
        with the refresh's status (and the resource's) when there is none to stage."""
        pin = hold(name, time.time())
        try:
            value = serving.manager.fetch_candidate(name, pin)
        except PineappleError as exc:
            raise act_refused(serving.manager, name, exc) from None
        if value is resource.NOT_MODIFIED:
            raise Refused(409, f"resource {name!r} is not modified: nothing to stage")
        return LentCandidate(serving, name, value, pin)

    def _refuse_if_staged(self) -> None:
        """:class:`Refused` (409) naming what is staged, if anything is."""
        staged = self._shadow.stage
        if staged is not None:
            raise staged_refusal(staged.resource, staged.content_hash)

    def promote(self) -> dict[str, Any]:
        return self._end("promote", "admin", "promoted by an admin")

    def abort(self) -> dict[str, Any]:
        return self._end("abort", "admin", "aborted by an admin")

    def candidate(self) -> dict[str, Any]:
        stage = self._shadow.stage
        return {
            "staged": None if stage is None else self._view(stage),
            "last_decision": self.last_decision,
        }

    # -- the decisions ----------------------------------------------------------------------

    def _end(
        self, decision: Decision, by: str, reason: str, expect: Stage | None = None
    ) -> dict[str, Any]:
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            stage = self._shadow.stage
            if stage is None or (expect is not None and stage is not expect):
                raise Refused(404, "no candidate is staged")
            # Kept before the stage ends, so a reader sees the stage or its decision.
            kept = self._decided(stage, decision, by, reason, self._shadow.summary(stage))
            self._shadow.end()
            if isinstance(stage.candidate, LentCandidate):
                return self._resource_ended(stage.candidate, decision, reason, kept)
            self._policy.staged = None
            if decision == "promote":
                return self._promoted(stage, kept)
            self._policy.refuse_again(stage.content_hash)  # the watcher leaves these bytes
            return self._aborted(stage, kept)

    def _promoted(self, stage: Stage, kept: dict[str, Any]) -> dict[str, Any]:
        began = time.monotonic()
        assert isinstance(stage.candidate, Snapshot), "a staged config's candidate"
        serial = self._target.publish(stage.candidate)
        if serial is None:
            raise Refused(503, "shutting down")
        self._policy.served = (stage.content_hash, serial)
        outcome = self._policy.record(
            ReloadOutcome(
                "ok", "promote", time.time(), time.monotonic() - began, stage.content_hash, serial
            )
        )
        _log.info("config %s promoted (%s): %s", kept["revision"], kept["by"], kept["reason"])
        return {"result": "promoted", **kept, "reload": outcome.to_dict()}

    def _resource_ended(
        self, candidate: LentCandidate, decision: Decision, reason: str, kept: dict[str, Any]
    ) -> dict[str, Any]:
        """A staged refresh promoted (swapped in as a refresh would) or aborted (refused)."""
        name = candidate.name
        if decision == "abort":
            closed = candidate.abort(f"aborted ({kept['by']}): {reason}", ABORT_WAIT_SECONDS)
            _log.warning("staged refresh of %r aborted (%s): %s", name, kept["by"], reason)
            return {"result": "aborted", **kept, "closed": closed}
        try:
            version = candidate.promote(ABORT_WAIT_SECONDS)
        except PineappleError as exc:  # the swap refused it (budget, a pin): dropped
            raise act_refused(candidate.serving.manager, name, exc) from None
        _log.info("staged refresh of %r promoted (%s) as version %s", name, kept["by"], version)
        return {"result": "promoted", **kept, "version": version}

    def _aborted(self, stage: Stage, kept: dict[str, Any]) -> dict[str, Any]:
        stage.candidate.retire()
        closed = stage.candidate.wait_closed(ABORT_WAIT_SECONDS)
        _log.warning("config %s aborted (%s): %s", kept["revision"], kept["by"], kept["reason"])
        return {"result": "aborted", **kept, "closed": closed}

    def _decided(
        self, stage: Stage, decision: Decision, by: str, reason: str, summary: dict[str, Any] | None
    ) -> dict[str, Any]:
        self.last_decision = {
            "decision": decision,
            "by": by,
            "reason": reason,
            "revision": stage.content_hash[:12],
            "resource": stage.resource,
            "at": time.time(),
            "summary": summary,
        }
        return self.last_decision

    def _decide(self, stage: Stage) -> None:
        """The shadow thread's hook: the stage's lifetime, then its thresholds."""
        if time.monotonic() >= stage.expires:
            verdict: tuple[Decision, str] | None = (
                "abort",
                f"staged for over --shadow-max-seconds {self._config.shadow_max_seconds:g}",
            )
            by = "lifetime"
        else:
            verdict = stage.thresholds.verdict(stage.summary)
            by = "thresholds"
        if verdict is None:
            return
        # Refused: ended meanwhile by someone else (an admin, a reload): nothing to decide.
        with contextlib.suppress(Refused):
            self._end(verdict[0], by, verdict[1], expect=stage)

    def _superseded(self, outcome: ReloadOutcome) -> None:
        """A reload listener (under the policy's lock): a config swapped in by anything but a
        promote aborts the stage."""
        if outcome.result != "ok" or outcome.trigger in ("promote", "start"):
            return
        stage = self._shadow.stage
        if stage is None:
            return
        revision = str(outcome.content_hash)[:12]
        reason = f"superseded by a reload ({outcome.trigger}) of config {revision}"
        self._decided(stage, "abort", "reload", reason, self._shadow.summary(stage))
        self._shadow.end()
        if isinstance(stage.candidate, LentCandidate):
            self._lift_carried_pin(stage.candidate)
            stage.candidate.abort(reason, 0.0)  # closes after its last shadowed request
            _log.warning("staged refresh of %r aborted: %s", stage.resource, reason)
            return
        self._policy.staged = None
        stage.candidate.retire()
        _log.warning("config %s aborted: %s", stage.content_hash[:12], reason)

    def _lift_carried_pin(self, candidate: LentCandidate) -> None:
        """The config swapped in carried the stage's pin over (its Manager adopted the
        slot): lift it there, so its refreshes swap again."""
        snap = self._holder.acquire()
        if snap is None:
            return
        try:
            with contextlib.suppress(resource.UnknownResourceError):  # the reload dropped it
                snap.manager.release_hold(candidate.name, candidate.pin)
        finally:
            snap.release()

    def _view(self, stage: Stage) -> dict[str, Any]:
        lent = stage.candidate if isinstance(stage.candidate, LentCandidate) else None
        return {
            "resource": stage.resource,
            "beside_version": None if lent is None else lent.version,
            "revision": stage.content_hash[:12],
            "content_hash": stage.content_hash,
            "snapshot": stage.candidate.serial,
            "share": stage.share,
            "staged_at": stage.staged_at,
            "expires_in_seconds": round(max(0.0, stage.expires - time.monotonic()), 3),
            "thresholds": stage.thresholds.to_dict(),
            "processes": 1,  # the processes shadowing it (a pod's: its workers that built it)
            "queued": self._shadow.queued,
            "summary": self._shadow.summary(stage),
        }


def stage_refused(exc: Exception) -> dict[str, Any]:
    """The ``error`` answer of a stage that could not be built (logged, as a reload's)."""
    step = exc.step if isinstance(exc, BuildError) else "start"
    report = exc.report if isinstance(exc, BuildError) else None
    _log.error("config not staged, the serving config stays: %s", exc)
    return {"result": "error", "step": step, "error": capped(str(exc)), "report": report}
