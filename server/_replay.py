"""Warm-up replay: a candidate config answers recent live requests before it may serve.

Before a reload swaps a new snapshot in, the candidate's engine and
resources answer (off the request path, on the reloading thread) the
config's own ``warmup_requests`` and then the sample of recent live requests
the serving snapshot answered ``200`` (``server/_request_sample.py``). A
candidate that fails any of them is refused like a config that does not
build: :class:`ReplayRefused` is a :class:`BuildError` at step ``replay``
whose :class:`ReplayReport` (how many were replayed and failed, the first
error and its operator) the reload outcome carries (``POST /admin/reload``
answers 422 with it, ``GET /config`` shows it), and the old snapshot keeps
serving. One process: the :class:`~server._reloader.Reloader` replays on the
snapshot it built; ``--workers N``: the supervisor's trial process replays on
the candidate it built as a worker would (``server/workers/supervisor/_trial.py``).

``warmup_requests`` (a top-level key of the config, which the engine
ignores) is a list; each entry is an ``/execute`` body (an object) for the
default pipeline group, or ``{"group": NAME, "request": BODY}``.

Bounds: the replay stops at ``seconds`` (``--replay-seconds``) from its
start; each request runs under ``min(--request-timeout-ms, what is left)``,
one at a time on the calling thread (so it uses at most that much CPU time
beyond what an operator's own threads use). Requests not reached by then are
counted ``skipped``, not failed; a request cut by the replay's own end is
skipped too. At most ``MAX_WARMUP_REQUESTS`` declared requests are read.
``seconds <= 0`` turns the replay off.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from pineapple import Context
from pineapple._error_text import capped

from ._build_error import BuildError
from ._config import Config, EngineLike, Responder
from ._request_sample import SampledRequest, SampleSource
from ._snapshot import Snapshot

__all__ = [
    "MAX_WARMUP_REQUESTS",
    "Answering",
    "CandidateReplay",
    "ReplayRefused",
    "ReplayReport",
    "check_candidate",
    "replay",
    "warmup_requests",
]

MAX_WARMUP_REQUESTS = 1000
"""The most ``warmup_requests`` entries a config may declare."""

_log = logging.getLogger("pineapple.server")
_OPERATOR = re.compile(r'operator "([^"]{1,256})"')


@dataclass
class ReplayReport:
    """What one replay found (``to_dict``: the JSON of the reload outcome's ``report``)."""

    requests: int = 0
    """Requests offered: the declared warm-up ones plus the sample."""
    warmup: int = 0
    replayed: int = 0
    failed: int = 0
    skipped: int = 0
    """Not run (or cut) because the replay's time budget ran out."""
    seconds: float = 0.0
    first_error: str | None = None
    first_status: int | None = None
    first_operator: str | None = None
    first_group: str | None = None
    statuses: dict[int, int] = field(default_factory=dict)
    """Failed requests by the candidate's status."""
    failed_live_too: int = 0
    """Requests the candidate failed that the live snapshot fails as well (a replay given a
    ``baseline``): not counted in ``failed``, which is the candidate's own failures."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "warmup": self.warmup,
            "replayed": self.replayed,
            "failed": self.failed,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 6),
            "first_error": self.first_error,
            "first_status": self.first_status,
            "first_operator": self.first_operator,
            "first_group": self.first_group,
            "failed_statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "failed_live_too": self.failed_live_too,
        }

    def summary(self) -> str:
        """One sentence for the reload's error text."""
        where = f" in operator {self.first_operator!r}" if self.first_operator else ""
        return (
            f"the candidate failed {self.failed} of {self.replayed} replayed requests "
            f"(status {self.first_status}{where}): {self.first_error}"
        )


class ReplayRefused(BuildError):
    """A candidate failed requests the serving config answers (step ``replay``)."""

    def __init__(self, reason: str, report: dict[str, Any]) -> None:
        super().__init__("replay", reason, report)  # report: ReplayReport.to_dict()


def warmup_requests(data: bytes) -> list[SampledRequest]:
    """The ``warmup_requests`` a config's bytes declare; :class:`BuildError` (step
    ``replay``) when the key is there but not a list of requests."""
    try:
        root = orjson.loads(data)
    except orjson.JSONDecodeError:
        return []  # not JSON: the build read it otherwise, and no warm-up is declared
    declared = root.get("warmup_requests") if isinstance(root, dict) else None
    if declared is None:
        return []
    if not isinstance(declared, list):
        raise BuildError("replay", "warmup_requests must be a list of /execute requests")
    if len(declared) > MAX_WARMUP_REQUESTS:
        raise BuildError(
            "replay",
            f"warmup_requests holds {len(declared)} requests, more than {MAX_WARMUP_REQUESTS}",
        )
    out: list[SampledRequest] = []
    for i, entry in enumerate(declared):
        group = None
        if isinstance(entry, dict) and "request" in entry:
            group = entry.get("group")
            if group is not None and not isinstance(group, str):
                raise BuildError("replay", f"warmup_requests[{i}].group must be a string")
            entry = entry["request"]
        if not isinstance(entry, dict):
            raise BuildError(
                "replay", f"warmup_requests[{i}] must be an object (an /execute request)"
            )
        out.append(SampledRequest(orjson.dumps(entry), group))
    return out


class Answering(Protocol):
    """What a replay runs requests on: an engine and the context its requests start from
    (a :class:`Snapshot`; or the serving engine with a candidate value lent in its
    context, ``server/_value_replay.py``)."""

    @property
    def engine(self) -> EngineLike: ...

    @property
    def context(self) -> Context: ...


def replay(
    snap: Answering,
    responder: Responder,
    requests: Sequence[SampledRequest],
    seconds: float,
    request_timeout: float | None,
    *,
    warmup: int = 0,
    baseline: Answering | None = None,
) -> ReplayReport:
    """Run ``requests`` on ``snap`` one by one until ``seconds`` pass; what they answered.

    ``baseline``: the live snapshot; a request ``snap`` fails is run on it too (within the
    same budget), and one it fails as well is not the candidate's failure
    (``failed_live_too``)."""
    began = time.monotonic()
    end = began + seconds
    report = ReplayReport(requests=len(requests), warmup=warmup)
    # Bounded: by the requests given and by ``end`` (each request's deadline is at most it).
    for request in requests:
        now = time.monotonic()
        if now >= end:
            break
        status, body = _answer(snap, responder, request, end, request_timeout)
        if status != 200 and time.monotonic() >= end:
            break  # cut by the replay's own budget: not the candidate's failure
        if status != 200 and baseline is not None:
            live, _ = _answer(baseline, responder, request, end, request_timeout)
            if live != 200 and time.monotonic() >= end:
                break  # the live answer was cut: nothing is known of this request
            if live != 200:
                report.replayed += 1
                report.failed_live_too += 1
                continue
        report.replayed += 1
        if status != 200:
            report.failed += 1
            report.statuses[status] = report.statuses.get(status, 0) + 1
            if report.first_error is None:
                report.first_status, report.first_group = status, request.group
                report.first_error = _error_of(body)
                found = _OPERATOR.search(report.first_error)
                report.first_operator = found.group(1) if found else None
    report.skipped = report.requests - report.replayed
    report.seconds = time.monotonic() - began
    return report


def _answer(
    snap: Answering,
    responder: Responder,
    request: SampledRequest,
    end: float,
    request_timeout: float | None,
) -> tuple[int, bytes]:
    """``request`` answered by ``snap`` under ``min(request_timeout, end)``: status, body."""
    now = time.monotonic()
    deadline = end if request_timeout is None else min(end, now + request_timeout)
    ctx = snap.context.with_deadline(deadline)
    try:
        if request.group is None:
            return responder(snap.engine, ctx, request.body)
        return responder(snap.engine, ctx, request.body, request.group)
    except Exception as exc:  # a responder's own failure: the request failed
        return 500, orjson.dumps({"error": f"internal error: {type(exc).__name__}"})


def check_candidate(
    snap: Snapshot,
    data: bytes,
    responder: Responder,
    sample: Sequence[SampledRequest],
    seconds: float,
    request_timeout: float | None,
) -> ReplayReport | None:
    """Replay the config's warm-up requests and ``sample`` on ``snap``; :class:`ReplayRefused`
    when any fails, :class:`BuildError` for a bad ``warmup_requests``. None: nothing ran."""
    if seconds <= 0:
        return None
    declared = warmup_requests(data)
    requests = [*declared, *sample]
    if not requests:
        return None
    report = replay(snap, responder, requests, seconds, request_timeout, warmup=len(declared))
    if report.failed:
        raise ReplayRefused(report.summary(), report.to_dict())
    return report


def _error_of(body: bytes) -> str:
    """The ``error`` of an answer's JSON (its first bytes when it has none)."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        return capped(answer["error"])
    return capped(body[:512].decode("utf-8", "replace"))


class CandidateReplay:
    """A reload's replay step: ``check(snap, data)`` before ``snap`` may serve (the
    settings of ``config``; the requests of ``sample`` at the time of the call)."""

    def __init__(self, config: Config, responder: Responder, sample: SampleSource) -> None:
        self._responder = responder
        self._sample = sample
        self._seconds = config.replay_seconds
        timeout_ms = config.request_timeout_ms
        self._timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None

    def __call__(self, snap: Snapshot, data: bytes) -> dict[str, Any] | None:
        """:class:`ReplayRefused` when the candidate ``snap`` fails a replayed request; else
        the replay's report (None: nothing to replay)."""
        report = check_candidate(
            snap, data, self._responder, self._sample(), self._seconds, self._timeout
        )
        if report is not None:
            _log.info(
                "warm-up replay: the candidate answered %d requests in %.2fs (%d skipped)",
                report.replayed,
                report.seconds,
                report.skipped,
            )
        return None if report is None else report.to_dict()
