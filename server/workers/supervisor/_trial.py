"""Trial builds: a config generation is accepted only once a worker could build all of it.

Under ``--workers N`` the supervisor checks a config (engine, resources,
dependencies) and fetches and publishes its shared resources, but it never
builds a per-worker resource (a ``redis_connection``, a ``static`` value, a
plugin type that does not share, a hand resource): only a worker does. Were
such a generation published when no worker can start one of them (a Redis
that refuses connections, with ``ping_at_start: true``), every worker would
fail to build it and restart over and over. So before the supervisor
publishes config bytes that hold a per-worker resource, one *trial* process
builds them exactly as a worker does (``trial_main`` in
``server/workers/worker/_main.py``: shared resources mapped from the store,
per-worker ones started for real, dependencies checked), answers, tears
everything down and exits, without ever serving. The generation is accepted
only if the trial built it; otherwise :func:`trial_build` raises the trial's
:class:`BuildError` (the step and message one process would report), the
reload is refused, and every worker keeps the last good generation. A config
without per-worker resources is built completely by the supervisor itself
(its check and its fetch), and no trial runs. Nor does one for a reload
whose per-worker entries are all unchanged: each worker carries them over
without building them again. When a trial runs, it stands in for the
unchanged ones for the same reason (a Redis down now does not refuse a
reload that a worker would have carried its pool across).

A trial also runs for a reload that changes what a worker builds besides
the shared data (operators, pipelines: the engine), which the supervisor
checked on its own idle core: a build that takes a trial worker longer than
``build_timeout_seconds`` (``--build-timeout-seconds``) is refused, so no
worker is asked to build what it cannot finish while it serves.

A trial of a reload also replays the pod's recent requests (and the config's
``warmup_requests``) on the candidate it built (``server/_replay.py``,
``server/workers/_sample_channel.py``); a candidate that fails one is refused
(:class:`ReplayRefused`, step ``replay``, with the replay's report).

:func:`run_trial` (a process started, its one reply awaited within a bound,
the process reaped) is shared with the value trial of a refreshed shared
value (``server/workers/supervisor/_value_trial.py``).

Bounds: the build is timed inside the trial (from the end of its imports to
a started snapshot) against ``build_timeout_seconds``; a trial is killed after
``max(start_timeout, build_timeout_seconds) + TRIAL_SPAWN_SECONDS`` (plus
``replay_seconds`` when it replays; a new
interpreter's imports take the rest), or within ``_POLL_SECONDS`` once the
supervisor is stopping (then nothing is decided: the reload answers
``shutting down``); its reply is read up to ``TRIAL_REPLY_MAX_BYTES``.

Guarantees:
- A config's trials run under the authority's reload lock, value trials under
  their own (``SharedValueReplay``): at most one of each at a time.
- A trial never outlives the call that started it: on every exit path it is
  joined, killed if it still runs, and reaped; it also dies with the
  supervisor (``PR_SET_PDEATHSIG``, as a worker).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, cast

import orjson

from ..._build_error import BuildError, BuildStep
from ..._config import Config
from ..._replay import ReplayRefused
from ..._request_sample import SampledRequest
from ..worker._main import TRIAL_REPLY_MAX_BYTES, trial_main
from ._publishing import SharedStore

__all__ = ["TRIAL_SPAWN_SECONDS", "run_trial", "trial_build"]

TRIAL_SPAWN_SECONDS = 30.0
"""What a trial may take beyond ``start_timeout`` (a new interpreter, its imports)."""
_POLL_SECONDS = 0.25
_TEARDOWN_SECONDS = 10.0
"""How long a trial that answered may take to close what it built before it is killed."""
_STEPS: frozenset[str] = frozenset(
    {"read", "plugins", "engine", "resources", "start", "deps", "replay"}
)

_log = logging.getLogger("pineapple.server")


def trial_build(
    config: Config,
    store: SharedStore,
    data: bytes,
    stopping: threading.Event,
    carried: tuple[str, ...] = (),
    sample: list[SampledRequest] | None = None,
    report: dict[str, Any] | None = None,
) -> bool:
    """Build ``data`` as a worker would, in a new process; :class:`BuildError` if it cannot.

    ``carried``: the per-worker entries every worker carries over unchanged
    (the trial does not fetch them either). ``sample``: requests the candidate must
    answer once built (``server/_replay.py``; None: no replay), else
    :class:`ReplayRefused`; what the replay found goes into ``report``. True once it
    was built; False when
    ``stopping`` was set meanwhile (nothing is decided).
    """
    limit = max(config.start_timeout, config.build_timeout_seconds) + TRIAL_SPAWN_SECONDS
    limit += config.replay_seconds if sample is not None else 0.0
    replayed = None if sample is None else tuple(sample)

    def args(reply: Connection) -> tuple[Any, ...]:
        return (config, str(store.path), data, reply, os.getpid(), carried, replayed)

    reply = run_trial(trial_main, args, limit, stopping)
    if reply is None:
        return False
    if report is not None and isinstance(reply.get("report"), dict):
        report.update(reply["report"])
    if reply.get("ok") is not True:
        step = str(reply.get("step"))
        if step == "replay" and isinstance(reply.get("report"), dict):
            raise ReplayRefused(str(reply["reason"]), reply["report"])
        raise BuildError(cast(BuildStep, step if step in _STEPS else "start"), str(reply["reason"]))
    return True


def run_trial(
    target: Callable[..., None],
    args: Callable[[Connection], tuple[Any, ...]],
    limit: float,
    stopping: threading.Event,
) -> dict[str, Any] | None:
    """Run ``target(*args(reply))`` in a new (spawned) process; its reply.

    ``reply`` is the write end of a pipe on which ``target`` sends one JSON object
    (``{"ok": ...}`` or ``{"reason": ...}``) before it tears down and exits. None when
    ``stopping`` was set meanwhile; :class:`BuildError` when no reply came within
    ``limit`` seconds or the process exited without one. The process never outlives
    this call (joined, killed if it still runs, reaped).
    """
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    proc = context.Process(target=target, args=args(writer), name="pineapple-trial")
    started = time.monotonic()
    try:
        try:
            proc.start()
        finally:
            writer.close()  # the trial holds the only write end: its exit is end-of-file here
        reply = _await(proc, reader, limit, stopping)
        if reply is not None:
            proc.join(_TEARDOWN_SECONDS)
    finally:
        reader.close()
        if proc.pid is not None:
            if proc.exitcode is None:
                proc.kill()
            proc.join(_TEARDOWN_SECONDS)  # SIGKILL: reaped at once
    if reply is not None:
        _log.info(
            "trial (pid %s): %s in %.2fs",
            proc.pid,
            "passed" if reply.get("ok") else "failed",
            time.monotonic() - started,
        )
    return reply


def _await(
    proc: multiprocessing.process.BaseProcess,
    reader: Connection,
    limit: float,
    stopping: threading.Event,
) -> dict[str, Any] | None:
    """The trial's reply (None once ``stopping``); :class:`BuildError` without one in time."""
    deadline = time.monotonic() + limit
    # Bounded: by ``deadline``, one poll of at most _POLL_SECONDS per turn.
    while True:
        if stopping.is_set():
            return None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BuildError(
                "start", f"no worker could build it within {limit:g}s (the trial was stopped)"
            )
        if not reader.poll(min(_POLL_SECONDS, remaining)):
            continue
        try:
            raw = reader.recv_bytes(TRIAL_REPLY_MAX_BYTES)
        except (EOFError, OSError):
            proc.join(_POLL_SECONDS)
            raise BuildError(
                "start",
                f"a worker building it exited with {proc.exitcode} before it could say how it went",
            ) from None
        reply = orjson.loads(raw)
        if not isinstance(reply, dict) or ("ok" not in reply and "reason" not in reply):
            raise BuildError("start", "a worker building it answered something unreadable")
        return reply
