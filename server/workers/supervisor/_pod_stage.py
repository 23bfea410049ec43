"""``PodStage``: under ``--workers N``, the supervisor holds the pod's staged candidate.

The one-process rules (``server/_stage.py``) over the pod: a stage is asked
of the supervisor over the control channel (ops :data:`STAGE_OPS`, seen
before the authority's own decisions); it reads and checks the config, has a
trial process build it as a worker would and replay the pod's sample on it
(:meth:`ConfigAuthority.try_candidate`), publishes nothing, writes the bytes
beside the pod's status (``stage-<hash>.json`` in the store's directory) and
names the stage in the pod's status (``stage``, with the pod's summary and
the last decision, which every worker's ``GET /config/candidate`` reads: an
unauthenticated read never takes a control slot). Every worker builds the
candidate from those bytes and shadows its share
(``server/workers/worker/_stage_follow.py``), sending its cumulative counts
(``shadow_counts``); the pod's summary is their sum. A promote applies the
staged bytes as the next config generation (the authority's reload, trigger
``promote``), which every worker follows as any reload; an abort, a
decision by the thresholds or the lifetime, or a reload that supersedes the
stage drop it from the status, and each worker retires its candidate.

A staged config under ``--workers N`` keeps the serving config's shared
resources (those the supervisor fetches and publishes): one that changes
them is refused (409), since its values would have to be published beside
the serving ones.

A staged refresh (op ``stage_resource``) of a shared resource is fetched by
the supervisor's publisher Manager (``Manager.fetch_candidate``: validated,
and replayed by a value trial for a ``replay`` entry), whose publishing
fetcher stages the value's files in the store unannounced, as a value trial's
(``_value_trial.py``); the status names the resource and where its files are
(``stem``, ``generation``), and every worker maps them as its candidate value,
lent beside its serving snapshot (``server/_resource_stage.py``). A promote
admits the value (``Manager.admit_candidate``: the fetcher's ``commit``
names the staged files in the manifest, which every worker maps as any
refresh); an abort refuses it and drops it (``discard``: the staged files
go). A resource each worker fetches itself (a type without a codec) is not
staged under ``--workers N`` (409).

Bounds: counts are kept for at most ``MAX_REPORTERS`` worker processes (a
restarted worker is a new one; its predecessor's counts stay); the decision
thread of a stage wakes at least every ``TICK_SECONDS`` and ends with the
stage, whose lifetime is ``--shadow-max-seconds``.

Guarantees:
- Stage, promote and abort hold the reload policy's lock, as in one process;
  ``_lock`` guards the staged state and the reports (never held while the
  policy's lock is asked for).
- The stage file is written before the status names it and removed after the
  status stops naming it (a worker never finds a named stage without its bytes,
  short of the supervisor's end).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pineapple import PineappleError, resource

from ..._atomic_file import write_atomically
from ..._build_error import BuildError
from ..._config import Config
from ..._decisions import Refused, act_refused
from ..._reload_policy import ReloadOutcome
from ..._resource_stage import hold
from ..._shadow import TICK_SECONDS
from ..._shadow_summary import Decision, ShadowSummary, Thresholds
from ..._stage import stage_refused, stage_settings, staged_refusal
from .._control import ControlError
from ._authority import ConfigAuthority

__all__ = ["MAX_REPORTERS", "STAGE_OPS", "PodStage"]

_log = logging.getLogger("pineapple.server")

STAGE_OPS = ("stage", "stage_resource", "promote", "abort", "shadow_counts")
"""The control requests a :class:`PodStage` answers."""
MAX_REPORTERS = 64
"""The most worker processes whose counts a stage keeps."""


@dataclass(frozen=True, eq=False)
class _Refreshed:
    """A staged refresh's value in the supervisor: the publisher it came from and its pin,
    and where its files are staged."""

    name: str
    value: Any
    publisher: resource.Manager
    pin: str
    stem: str
    generation: int
    version: int | None


@dataclass(eq=False)
class _Staged:
    id: int
    content_hash: str
    data: bytes
    file: Path | None
    share: float
    thresholds: Thresholds
    expires: float
    refreshed: _Refreshed | None = None
    """A staged refresh (None: a staged config, its bytes in ``file``)."""
    staged_at: float = field(default_factory=time.time)
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)
    """``pid -> counts`` (``ShadowSummary.counts``), the newest each worker sent."""
    ended: threading.Event = field(default_factory=threading.Event)


class PodStage:
    """The pod's stage, held by the supervisor (see module docs)."""

    def __init__(self, authority: ConfigAuthority, config: Config) -> None:
        self._authority = authority
        self._policy = authority.policy
        self._config = config
        self._lock = threading.Lock()
        self._staged: _Staged | None = None
        self._ids = 0
        self.last_decision: dict[str, Any] | None = None
        authority.extra_status["stage"] = self.posted
        self._policy.listeners.append(self._superseded)
        before = authority.middleware

        def middleware(request: dict[str, Any], decide: Any) -> dict[str, Any]:
            if request.get("op") in STAGE_OPS:
                return self.handle(request)
            if before is not None:
                return before(request, decide)
            answer: dict[str, Any] = decide(request)
            return answer

        authority.middleware = middleware

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one of :data:`STAGE_OPS`."""
        op = request.get("op")
        if op == "stage":
            given = request.get("given")
            if not isinstance(given, dict):
                raise ControlError("control request 'stage': its settings are an object")
            return self.stage(given)
        if op == "stage_resource":
            given, name = request.get("given"), request.get("name")
            if not isinstance(given, dict) or not isinstance(name, str):
                raise ControlError("control request 'stage_resource': a name and settings")
            return self.stage_resource(name, given)
        if op == "promote":
            return self._end("promote", "admin", "promoted by an admin")
        if op == "abort":
            return self._end("abort", "admin", "aborted by an admin")
        return self._counted(request)  # shadow_counts

    # -- the decisions ----------------------------------------------------------------

    def stage(self, given: Mapping[str, Any]) -> dict[str, Any]:
        thresholds, share = stage_settings(given, self._config.shadow_share)
        authority = self._authority
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            if authority.stopping.is_set():
                raise Refused(503, "shutting down")
            self._refuse_if_staged()
            try:
                data = authority.read()
                digest = hashlib.sha256(data).hexdigest()
                served = self._policy.served
                if served is not None and served[0] == digest:
                    raise Refused(409, f"config {digest[:12]} serves already: nothing to stage")
                report = authority.try_candidate(authority.check(data))
            except Refused:
                raise
            except Exception as exc:  # nothing is staged; what serves is untouched
                return stage_refused(exc)
            path = authority.store.path / f"stage-{digest[:16]}.json"
            try:
                write_atomically(path, data)
            except OSError as exc:  # a full /dev/shm, say: nothing is staged
                raise Refused(507, f"cannot write the staged config: {exc.strerror}") from None
            with self._lock:
                self._ids += 1
                expires = time.monotonic() + self._config.shadow_max_seconds
                staged = _Staged(self._ids, digest, data, path, share, thresholds, expires)
                self._staged = staged
            self._policy.staged = digest
        threading.Thread(
            target=self._decide, args=(staged,), name="pineapple-stage", daemon=True
        ).start()
        _log.info("config %s staged in every worker: %g of /execute shadowed", digest[:12], share)
        return {"result": "staged", "candidate": self._view(staged), "report": report}

    def stage_resource(self, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """Fetch a new value of the shared resource ``name`` and stage it (see module docs)."""
        thresholds, share = stage_settings(given, self._config.shadow_share)
        authority = self._authority
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            if authority.stopping.is_set():
                raise Refused(503, "shutting down")
            self._refuse_if_staged()
            digest = authority.serving_hash
            if digest is None:
                raise Refused(503, "the supervisor has not loaded the config yet")
            refreshed = self._fetched(name)
            with self._lock:
                self._ids += 1
                expires = time.monotonic() + self._config.shadow_max_seconds
                staged = _Staged(
                    self._ids, digest, b"", None, share, thresholds, expires, refreshed
                )
                self._staged = staged
        threading.Thread(
            target=self._decide, args=(staged,), name="pineapple-stage", daemon=True
        ).start()
        _log.info(
            "resource %r staged in every worker (a refresh beside version %s): %g of /execute "
            "shadowed",
            name,
            refreshed.version,
            share,
        )
        return {"result": "staged", "candidate": self._view(staged)}

    def _fetched(self, name: str) -> _Refreshed:
        """A new value of ``name``, its files staged in the store, pinned by the stage."""
        try:
            publisher = self._authority.shared_publisher(name)
        except Refused as exc:
            if exc.status != 400:
                raise
            raise Refused(
                409, f"{exc}, so a refresh of it is not staged under --workers N"
            ) from None
        pin = hold(name, time.time())
        version = publisher.version_of(name)
        try:
            value = publisher.fetch_candidate(name, pin)
        except PineappleError as exc:
            raise act_refused(publisher, name, exc) from None
        if value is resource.NOT_MODIFIED:
            raise Refused(409, f"resource {name!r} is not modified: nothing to stage")
        where = self._authority.staged_of(publisher, value)
        if where is None:  # pragma: no cover - a publishing fetcher stages every value
            publisher.refuse_candidate(name, pin, "its staged files were not found")
            publisher.drop_candidate(name, value)
            raise Refused(500, f"resource {name!r}: its staged files were not found")
        return _Refreshed(name, value, publisher, pin, where.stem, where.generation, version)

    def _refuse_if_staged(self) -> None:
        """:class:`Refused` (409) naming what is staged, if anything is."""
        staged = self._staged
        if staged is not None:
            name = None if staged.refreshed is None else staged.refreshed.name
            raise staged_refusal(name, staged.content_hash)

    def _end(
        self, decision: Decision, by: str, reason: str, expect: _Staged | None = None
    ) -> dict[str, Any]:
        with self._policy.exclusive() as held:
            if not held:
                raise Refused(503, f"a reload has been running for over {self._policy.wait:g}s")
            staged = self._take(decision, by, reason, expect)
            kept = self.last_decision or {}
            if staged.refreshed is not None:
                return self._refresh_ended(staged.refreshed, decision, reason, kept)
            if decision == "abort":
                self._policy.refuse_again(staged.content_hash)  # the watcher leaves these bytes
                _log.warning("config %s aborted (%s): %s", kept.get("revision"), by, reason)
                return {"result": "aborted", **kept}
            began = time.monotonic()
            try:
                serial = self._policy.apply_held(staged.data)
            except Exception as exc:  # nothing of it serves; the decision stands as told
                _log.error("config %s could not be promoted: %s", staged.content_hash[:12], exc)
                step = exc.step if isinstance(exc, BuildError) else "start"
                return {"result": "error", "step": step, "error": str(exc), **kept}
            if serial is None:
                raise Refused(503, "shutting down")
            outcome = self._policy.record(
                ReloadOutcome(
                    "ok",
                    "promote",
                    time.time(),
                    time.monotonic() - began,
                    staged.content_hash,
                    serial,
                )
            )
        _log.info("config %s promoted (%s): %s", kept.get("revision"), by, reason)
        return {"result": "promoted", **kept, "reload": outcome.to_dict()}

    def _refresh_ended(
        self, refreshed: _Refreshed, decision: Decision, reason: str, kept: dict[str, Any]
    ) -> dict[str, Any]:
        """A staged refresh promoted (admitted: its files named in the manifest) or aborted
        (refused, its files discarded). The workers dropped their candidates meanwhile."""
        name, by = refreshed.name, kept.get("by")
        publisher = refreshed.publisher
        if decision == "abort":
            publisher.refuse_candidate(name, refreshed.pin, f"aborted ({by}): {reason}")
            publisher.drop_candidate(name, refreshed.value)
            _log.warning("staged refresh of %r aborted (%s): %s", name, by, reason)
            return {"result": "aborted", **kept}
        try:
            version = publisher.admit_candidate(name, refreshed.value, refreshed.pin)
        except PineappleError as exc:  # the swap refused it (budget, a pin): dropped
            raise act_refused(publisher, name, exc) from None
        _log.info("staged refresh of %r promoted (%s) as version %s", name, by, version)
        return {"result": "promoted", **kept, "version": version}

    def _take(
        self, decision: Decision, by: str, reason: str, expect: _Staged | None = None
    ) -> _Staged:
        """End the stage (the decision kept first), its file removed; :class:`Refused` (404)
        when none (or not ``expect``) is staged."""
        with self._lock:
            staged = self._staged
            if staged is None or (expect is not None and staged is not expect):
                raise Refused(404, "no candidate is staged")
            self.last_decision = {
                "decision": decision,
                "by": by,
                "reason": reason,
                "revision": staged.content_hash[:12],
                "resource": None if staged.refreshed is None else staged.refreshed.name,
                "at": time.time(),
                "summary": self._summary(staged).to_dict(),
            }
            self._staged = None
        self._policy.staged = None
        staged.ended.set()
        self._authority.board.post()  # the workers drop their candidates
        if staged.file is not None:
            with contextlib.suppress(FileNotFoundError):
                staged.file.unlink()
        return staged

    def _decide(self, staged: _Staged) -> None:
        """The stage's thread: its lifetime and thresholds, after each report and every tick."""
        # Bounded: the stage's lifetime (the deadline ends it), each wait TICK_SECONDS.
        while not staged.ended.wait(TICK_SECONDS):
            if time.monotonic() >= staged.expires:
                seconds = self._config.shadow_max_seconds
                verdict: tuple[Decision, str] | None = (
                    "abort",
                    f"staged for over --shadow-max-seconds {seconds:g}",
                )
                by = "lifetime"
            else:
                with self._lock:
                    summary = self._summary(staged)
                verdict, by = staged.thresholds.verdict(summary), "thresholds"
            if verdict is not None:
                with contextlib.suppress(Refused):  # ended meanwhile: nothing to decide
                    self._end(verdict[0], by, verdict[1], expect=staged)
                self._authority.board.post()
                return

    def _superseded(self, outcome: ReloadOutcome) -> None:
        """A reload listener (under the policy's lock): a config applied by anything but a
        promote aborts the stage."""
        if outcome.result != "ok" or outcome.trigger in ("promote", "start"):
            return
        revision = str(outcome.content_hash)[:12]
        reason = f"superseded by a reload ({outcome.trigger}) of config {revision}"
        with contextlib.suppress(Refused):
            staged = self._take("abort", "reload", reason)
            refreshed = staged.refreshed
            if refreshed is None:
                _log.warning("the staged config was aborted: %s", reason)
                return
            current = self._authority.publisher  # the pin was carried over to it
            if current is not None and refreshed.name in current.names():
                current.release_hold(refreshed.name, refreshed.pin)
            self._refresh_ended(refreshed, "abort", reason, self.last_decision or {})

    # -- the counts and the views -------------------------------------------------------

    def _counted(self, request: dict[str, Any]) -> dict[str, Any]:
        stage_id, pid, counts = request.get("stage"), request.get("pid"), request.get("counts")
        if (
            not isinstance(stage_id, int)
            or not isinstance(pid, int)
            or not isinstance(counts, dict)
        ):
            raise ControlError("control request 'shadow_counts': a stage, a pid and counts")
        try:
            ShadowSummary(0).merge(counts)
        except ValueError as exc:
            raise ControlError(f"control request 'shadow_counts': {exc}") from None
        with self._lock:
            staged = self._staged
            if staged is None or staged.id != stage_id:
                return {"result": "ended"}
            if pid in staged.reports or len(staged.reports) < MAX_REPORTERS:
                staged.reports[pid] = counts
        self._authority.board.changed()  # the summary shows within the board's next wake
        return {"result": "noted"}

    def _summary(self, staged: _Staged) -> ShadowSummary:
        """The pod's summary: every worker's counts added (hold ``_lock``)."""
        summary = ShadowSummary(self._config.shadow_examples)
        for counts in staged.reports.values():  # bounded: MAX_REPORTERS
            summary.merge(counts)
        return summary

    def candidate(self) -> dict[str, Any]:
        with self._lock:
            staged = self._staged
        return {
            "staged": None if staged is None else self._view(staged),
            "last_decision": self.last_decision,
        }

    def _view(self, staged: _Staged) -> dict[str, Any]:
        with self._lock:
            summary = self._summary(staged).to_dict()
            workers = len(staged.reports)
        refreshed = staged.refreshed
        return {
            "resource": None if refreshed is None else refreshed.name,
            "beside_version": None if refreshed is None else refreshed.version,
            "revision": staged.content_hash[:12],
            "content_hash": staged.content_hash,
            "share": staged.share,
            "staged_at": staged.staged_at,
            "expires_in_seconds": round(max(0.0, staged.expires - time.monotonic()), 3),
            "thresholds": staged.thresholds.to_dict(),
            "processes": workers,  # the workers shadowing it (each reports once it does)
            "summary": summary,
        }

    def posted(self) -> dict[str, Any]:
        """What the pod's status says of the stage (``stage``): what a worker builds
        (``staged``, None: nothing) and what ``GET /config/candidate`` answers."""
        staged = self._staged
        build = None
        if staged is not None:
            build = {
                "id": staged.id,
                "content_hash": staged.content_hash,
                "file": None if staged.file is None else staged.file.name,
                "share": staged.share,
            }
            refreshed = staged.refreshed
            if refreshed is not None:  # a worker maps these files as its candidate value
                build.update(
                    resource=refreshed.name, stem=refreshed.stem, generation=refreshed.generation
                )
        return {"staged": build, "candidate": self.candidate()}
