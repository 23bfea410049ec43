"""``ValueReplay``: a refreshed value of a ``replay`` entry answers recent requests first.

A resource entry declared with ``"replay": true`` (beside ``interval``) opts
in: before a refreshed value of it is swapped in, the serving engine answers
the process's sample of recent live requests (``server/_request_sample.py``)
with that value lent in place of the live one (every other resource is
borrowed as it serves). A value that fails any of them is refused like a
validator's refusal (``Manager.set_replay``): the last good value keeps
serving, the resource's ``Valid`` condition turns False with the check
``replay`` and the replay's summary (how many failed, the first error and
its operator). A first load, an empty sample or ``--replay-seconds 0`` replays
nothing and accepts the value.

A request the candidate fails is run on the live snapshot too: one that the
live value fails as well (a source both read is down) is not the candidate's
failure (``failed_live_too`` in the report), so only failures the candidate
brings refuse it.

It runs on the refresh thread of the resource (never on a request path), by
the process that fetches the value: one process, or a worker for its own
(per-worker) resources. Under ``--workers N`` a shared value (its type has a
codec) is fetched by the supervisor, which has no engine: a trial process
replays it there (:func:`replay_value` on the serving config it builds as a
worker does, ``server/workers/supervisor/_value_trial.py``); a worker never
replays a shared value it maps (the supervisor admitted it).

Bounds: those of the config replay (``server/_replay.py``): at most
``--replay-seconds`` from its start, one request at a time, each under
``min(--request-timeout-ms, what is left)``; the sample is bounded by the
``--replay-sample-*`` flags.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pineapple import Context, resource

from ._config import Config, EngineLike, Responder
from ._replay import Answering, ReplayReport, replay
from ._request_sample import SampledRequest, SampleSource
from ._snapshot import SnapshotHolder

__all__ = ["ValueReplay", "lend", "replay_value"]

_log = logging.getLogger("pineapple.server")


@dataclass(frozen=True)
class _Lent:
    """The serving engine, and a context whose resources lend the candidate value."""

    engine: EngineLike
    context: Context


class _Borrowed:
    """A provider lending ``value`` for ``name`` and every other resource from ``manager``."""

    def __init__(self, manager: resource.Manager, name: str, value: Any) -> None:
        self._manager = manager
        self._name = name
        self._candidate = resource.Static({name: value})

    def get(self, name: str) -> Any:  # a ResourceProvider's handle (the Static one is private)
        if name == self._name:
            return self._candidate.get(name)
        return self._manager.get(name)


def lend(context: Context, manager: resource.Manager, name: str, value: Any) -> Context:
    """``context`` whose resources lend ``value`` for ``name`` and borrow every other one
    from ``manager`` (a replayed value, a staged refresh's candidate)."""
    return resource.with_resources(context, _Borrowed(manager, name, value))


def replay_value(
    snap: Answering,
    manager: resource.Manager,
    name: str,
    value: Any,
    responder: Responder,
    requests: list[SampledRequest],
    seconds: float,
    request_timeout: float | None,
) -> ReplayReport:
    """``requests`` answered by ``snap``'s engine with ``value`` lent for ``name`` (every
    other resource borrowed from ``manager``), each failure checked on ``snap`` itself."""
    lent = _Lent(snap.engine, lend(snap.context, manager, name, value))
    return replay(lent, responder, requests, seconds, request_timeout, baseline=snap)


class ValueReplay:
    """``check(manager, name, value)``: raises with the replay's summary when ``value``
    fails a request of the sample that the serving snapshot answered (see module docs)."""

    def __init__(
        self, config: Config, responder: Responder, sample: SampleSource, holder: SnapshotHolder
    ) -> None:
        self._responder = responder
        self._sample = sample
        self._holder = holder
        self._seconds = config.replay_seconds
        timeout_ms = config.request_timeout_ms
        self._timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None

    def check(self, manager: resource.Manager, name: str, value: Any) -> None:
        """Replay the sample with ``value`` lent for ``name``; ``ValueError`` to refuse it."""
        if self._seconds <= 0:
            return
        requests = self._sample()
        if not requests:
            return
        snap = self._holder.acquire()
        if snap is None:
            return  # nothing serves: no engine to answer with
        try:
            report = replay_value(
                snap, manager, name, value, self._responder, requests, self._seconds, self._timeout
            )
        finally:
            snap.release()
        if report.failed:
            raise ValueError(report.summary())  # refused "by replay" (the check's name)
        _log.info(
            "resource %r: the refreshed value answered %d replayed requests in %.2fs (%d skipped)",
            name,
            report.replayed,
            report.seconds,
            report.skipped,
        )
