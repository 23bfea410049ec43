"""A worker's side of the pod's stage: build the staged candidate, shadow, report, drop.

The supervisor names the pod's staged candidate in its status (``stage``:
its id, content hash, share and the file of its bytes beside the status;
``server/workers/supervisor/_pod_stage.py``). :class:`StageFollow`'s thread
reads the status every ``FOLLOW_SECONDS``: a new stage is read (at most
``--max-config-bytes``, its hash checked), built under this worker's reload
lock as a reload builds (``SnapshotTarget.prepare``: carried over from the
serving snapshot, the shared values mapped) and set on the worker's
:class:`~server._shadow.Shadow`; a stage the status no longer names is
ended and its candidate retired. A staged refresh (the status names its
``resource``, and the ``stem`` and ``generation`` of its files the
supervisor staged in the store, unannounced) is mapped with the type's codec
and lent beside this worker's serving snapshot
(:class:`~server._resource_stage.LentCandidate`), whose retirement closes
the mapping once its last shadowed request ends. The shadow's thread sends the worker's
cumulative counts to the supervisor (``shadow_counts``) at most every
``REPORT_SECONDS`` when they changed. :class:`StageLink` is the worker's
:class:`~server._stage.StageDecisions`: every decision is the supervisor's,
asked over the control channel; the pod's summary is read from its status.

Guarantees:
- Only the follow thread begins and ends this worker's stage, so a candidate
  is retired once, by it (or by the service's stop, after the thread ended).
- Every wait is bounded: the follow thread waits ``FOLLOW_SECONDS`` a turn and
  ends within one turn (plus a build in progress) of :meth:`StageFollow.stop`;
  a report is one control call; :meth:`StageLink.stage` and ``abort`` wait for
  this worker's own follow at most ``WAIT_SECONDS``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..._build_error import BuildError
from ..._config import Config
from ..._decisions import Refused
from ..._reloader import Reloader
from ..._resource_stage import LentCandidate
from ..._shadow import Shadow, Stage
from ..._shadow_summary import ShadowSummary, Thresholds
from ..._snapshot import SnapshotHolder
from .._pod_status import StatusReader
from .._store_format import codec_of
from ._supervisor_link import SupervisorChannel

__all__ = [
    "FOLLOW_SECONDS",
    "REPORT_MAX_BYTES",
    "REPORT_SECONDS",
    "WAIT_SECONDS",
    "StageFollow",
    "StageLink",
]

_log = logging.getLogger("pineapple.server")

FOLLOW_SECONDS = 0.1
"""How often a worker reads the pod's status for a stage."""
REPORT_SECONDS = 0.2
"""The least time between two reports of a worker's counts."""
REPORT_MAX_BYTES = 32 << 10
"""The most bytes of a worker's report (its examples are cut to fit; the control channel
takes 64 KiB a message)."""
WAIT_SECONDS = 30.0
"""How long a stage or an abort asked of this worker waits for its own follow."""


class StageFollow:
    """A worker's thread over the pod's stage (see module docs)."""

    def __init__(
        self,
        config: Config,
        reloader: Reloader,
        shadow: Shadow,
        pod: StatusReader,
        channel: SupervisorChannel,
        holder: SnapshotHolder,
    ) -> None:
        self._config = config
        self._holder = holder
        self._reloader = reloader
        self._shadow = shadow
        self._pod = pod
        self._channel = channel
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self.following: int | None = None
        """The id of the stage this worker shadows (None: none)."""
        self._failed: int | None = None
        self._thread: threading.Thread | None = None
        self._sent: tuple[int, int] | None = None
        self._sent_at = 0.0
        shadow.decide = self._report

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pineapple-stage", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(FOLLOW_SECONDS + self._config.start_timeout)
        self._drop()

    def wait_for(self, stage_id: int | None, timeout: float = WAIT_SECONDS) -> bool:
        """Wait (at most ``timeout``) until this worker follows ``stage_id`` (None: none)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.following == stage_id or self._failed == stage_id, timeout
            )

    def status(self) -> dict[str, Any]:
        """The pod's status; :class:`Refused` (503) when no supervisor posts it."""
        return self._pod.read()

    def posted(self) -> int | None:
        """The id of the stage the pod's status names (None: none, or no status)."""
        try:
            posted = _staged(self._pod.read())
        except Refused:
            return None
        stage_id = None if posted is None else posted.get("id")
        return stage_id if isinstance(stage_id, int) else None

    def _run(self) -> None:
        # Bounded: each turn waits FOLLOW_SECONDS; the loop ends at stop().
        while not self._stop.wait(FOLLOW_SECONDS):
            try:
                posted = _staged(self._pod.read())
            except Refused:
                continue  # no supervisor status now: the next turn reads it again
            wanted = None if posted is None else posted.get("id")
            if wanted != self.following:
                self._drop()
            if posted is not None and wanted != self.following and wanted != self._failed:
                self._follow(posted)
            with self._changed:
                self._changed.notify_all()

    def _follow(self, posted: Mapping[str, Any]) -> None:
        stage_id, digest = posted.get("id"), posted.get("content_hash")
        name, share = posted.get("file"), posted.get("share")
        if not (
            isinstance(stage_id, int) and isinstance(digest, str) and isinstance(share, int | float)
        ):
            return
        if posted.get("resource") is not None:
            self._follow_refresh(posted, stage_id, digest, float(share))
            return
        if not isinstance(name, str):
            return
        try:
            data = _read(self._pod.path.parent / Path(name).name, self._config.max_config_bytes)
            if hashlib.sha256(data).hexdigest() != digest:
                raise BuildError("read", "the staged bytes do not match their hash")
            target = self._reloader.target
            with self._reloader.policy.exclusive() as held:
                if not held:
                    return  # a reload runs: the next turn tries again
                snap = target.prepare(target.check(data))
        except (BuildError, OSError) as exc:
            _log.error("cannot build the staged config %s: %s", digest[:12], exc)
            self._failed = stage_id
            return
        if snap is None:
            return  # shutting down
        summary = ShadowSummary(self._config.shadow_examples)
        self._shadow.begin(
            Stage(snap, digest, float(share), Thresholds(), summary, expires=math.inf)
        )
        self.following = stage_id
        self._sent = None
        self._send(self._shadow.stage)  # at once: the pod counts this worker as shadowing

    def _follow_refresh(
        self, posted: Mapping[str, Any], stage_id: int, digest: str, share: float
    ) -> None:
        """Map the staged value the status names and shadow it beside the serving snapshot."""
        name, stem = posted.get("resource"), posted.get("stem")
        generation = posted.get("generation")
        if not (isinstance(name, str) and isinstance(stem, str) and isinstance(generation, int)):
            return
        serving = self._holder.acquire()
        if serving is None:
            return  # nothing serves yet: the next turn tries again
        try:
            entry = serving.manager.entries().get(name)
            codec = None if entry is None else codec_of(self._config.resource_types(), entry.type)
            if codec is None:
                raise BuildError("read", f"resource {name!r} is not shared in this worker")
            value = codec.open(self._pod.path.parent / Path(stem).name, generation)
        except Exception as exc:  # a codec's error, a file gone: this worker does not shadow
            serving.release()
            _log.error("cannot map the staged refresh of %r: %s", name, exc)
            self._failed = stage_id
            return
        candidate = LentCandidate(serving, name, value, pin="")
        summary = ShadowSummary(self._config.shadow_examples)
        self._shadow.begin(
            Stage(candidate, digest, share, Thresholds(), summary, expires=math.inf, resource=name)
        )
        self.following = stage_id
        self._sent = None
        self._send(self._shadow.stage)  # at once: the pod counts this worker as shadowing

    def _drop(self) -> None:
        stage = self._shadow.end()
        self.following = None
        if stage is not None:
            stage.candidate.retire()

    def _report(self, stage: Stage) -> None:
        """The shadow thread's hook: send this worker's counts when they changed."""
        stage_id = self.following
        now = time.monotonic()
        if stage_id is None or now - self._sent_at < REPORT_SECONDS:
            return
        self._send(stage)

    def _send(self, stage: Stage | None) -> None:
        """Send this worker's counts of ``stage`` unless they are what was sent last."""
        stage_id = self.following
        if stage is None or stage_id is None:
            return
        counts = self._shadow.counts(stage)
        examples = counts["examples"]
        # Bounded: halves the examples each turn until the report fits the channel.
        while examples and len(orjson.dumps(counts)) > REPORT_MAX_BYTES:
            del examples[len(examples) // 2 :]
        seen = (counts["count"]["requests"], counts["count"]["dropped"])
        if seen == self._sent:
            return
        self._sent_at = time.monotonic()
        request = {"op": "shadow_counts", "stage": stage_id, "pid": os.getpid(), "counts": counts}
        try:
            self._channel.ask(request)
        except Refused as exc:
            _log.debug("cannot send the shadow's counts: %s", exc)
            return
        self._sent = seen


def _staged(status: dict[str, Any]) -> dict[str, Any] | None:
    """What the pod's status names to build (``stage.staged``; None: nothing)."""
    stage = status.get("stage")
    staged = stage.get("staged") if isinstance(stage, dict) else None
    return staged if isinstance(staged, dict) else None


def _read(path: Path, max_bytes: int) -> bytes:
    with open(path, "rb") as source:
        data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise BuildError("read", f"the staged config is over {max_bytes} bytes")
    return data


class StageLink:
    """A worker's :class:`~server._stage.StageDecisions`: the supervisor's decisions, then
    this worker's own follow of them."""

    def __init__(self, channel: SupervisorChannel, follow: StageFollow) -> None:
        self._channel = channel
        self._follow = follow

    def stage(self, given: Mapping[str, Any]) -> dict[str, Any]:
        answer = self._channel.ask({"op": "stage", "given": dict(given)})
        if answer.get("result") == "staged":  # this worker shadows before it answers
            self._follow.wait_for(self._follow.posted())
        return answer

    def promote(self) -> dict[str, Any]:
        answer = self._channel.ask({"op": "promote"})
        self._follow.wait_for(None)
        return answer

    def abort(self) -> dict[str, Any]:
        answer = self._channel.ask({"op": "abort"})
        self._follow.wait_for(None)
        return answer

    def stage_resource(self, name: str, given: Mapping[str, Any]) -> dict[str, Any]:
        answer = self._channel.ask({"op": "stage_resource", "name": name, "given": dict(given)})
        if answer.get("result") == "staged":  # this worker shadows before it answers
            self._follow.wait_for(self._follow.posted())
        return answer

    def candidate(self) -> dict[str, Any]:
        """The pod's summary as the supervisor last posted it (never a control request)."""
        stage = self._follow.status().get("stage")
        candidate = stage.get("candidate") if isinstance(stage, dict) else None
        if not isinstance(candidate, dict):
            return {"staged": None, "last_decision": None}
        return candidate
