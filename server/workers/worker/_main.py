"""A worker process of ``--workers N``: serve with every shared resource mapped from the store.

The worker builds from the config bytes its supervisor accepted (read from
the store before its service is made), maps shared snapshots
(``mapped_registry``), follows new generations and config generations
(``Follower``), and forwards admin decisions to the supervisor
(``SupervisorLink``): its ``Service`` is given them at construction
(``WorkerRole``). See ``server/workers/supervisor/_supervisor.py``.

A *trial* process (:func:`trial_main`) is a worker that builds one candidate
config exactly as a worker would, answers whether it could, tears it down and
exits without serving (the supervisor's side is ``server/workers/supervisor/_trial.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

import orjson

from pineapple import resource
from pineapple._error_text import capped
from pineapple.resource.lowlevel import LoadedConfig

from ..._build import Builder, default_responder, import_plugins
from ..._build_error import BuildError
from ..._config import Config, ConfigSource, Responder
from ..._cpu_pin import pin_process
from ..._decisions import LocalDecisions
from ..._log_format import configure_logging
from ..._logmask import install_log_mask
from ..._replay import CandidateReplay
from ..._request_sample import RequestSample, SampledRequest
from ..._snapshot import Snapshot, SnapshotHolder
from ...http._serving import exit_within, serve
from ...metrics._pod_metrics import PodMetrics
from .._liveness import START_SLACK_SECONDS, Heartbeat
from .._sample_channel import SampleServer
from .._store_format import METRICS_DIR, codec_of
from ._mapping import MappedStore, mapped_registry
from ._role import WorkerRole
from ._supervisor_link import SharedConfigSource

__all__ = [
    "TRIAL_REPLY_MAX_BYTES",
    "answer_trial",
    "die_with_parent",
    "trial_main",
    "trial_responder",
    "worker_main",
    "worker_settings",
]

TRIAL_REPLY_MAX_BYTES = 64 * 1024
"""The largest trial reply read (its message is at most ``MAX_ERROR_BYTES``: escaped, it fits)."""
_TRIAL_TEARDOWN_SECONDS = 5.0

_PR_SET_PDEATHSIG = 1

_log = logging.getLogger("pineapple.server")


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGTERM this process when its parent dies (before the follower runs).

    Covers a supervisor dying while this worker still starts; the follower's
    pipe covers the rest (and other systems). If the parent is already gone, exit.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the follower's end-of-file check alone
    if os.getppid() != parent_pid:
        raise SystemExit(1)


def worker_settings(
    config: Config, store: MappedStore, source: ConfigSource | None = None
) -> Config:
    """``config`` as a worker builds it: shared types mapped from ``store``, one process."""
    base = config.resource_types()
    wiring = replace(
        config.wiring,
        registry=mapped_registry(base, store),
        config_source=source,
        # Shared types are fetched (and their fetches counted) by the supervisor alone.
        pod_metrics=PodMetrics(
            store.path / METRICS_DIR,
            fetched_elsewhere=lambda type_name: codec_of(base, type_name) is not None,
        ),
    )
    return replace(config, watch=False, workers=1, wiring=wiring)


def worker_main(
    config: Config,
    sock: socket.socket,
    store_path: str,
    parent: Connection,
    parent_pid: int,
    beats: Connection,
    *,
    cpu: int | None = None,
    index: int = 0,
) -> None:
    """A worker process: serve with every shared resource read from the store.

    ``beats``: the pipe on which it tells the supervisor it still follows (``_liveness``).
    ``cpu``: the CPU it runs on (``--pin-cpus``), ``index``: its slot, for the log.
    """
    die_with_parent(parent_pid)
    began = time.monotonic()
    start_bound = config.start_timeout + START_SLACK_SECONDS
    heartbeat = Heartbeat(beats, lambda: time.monotonic() - began < start_bound)
    heartbeat.start()
    configure_logging(config.log_level, config.log_format)
    if cpu is not None:  # its threads now (the heartbeat's) move; later ones inherit the mask
        pin_process(cpu, f"worker {index}")
    import_plugins(config.plugins)
    store = MappedStore(store_path)
    base = config.resource_types()
    worker_config = worker_settings(config, store, SharedConfigSource(store))
    # Its recent requests, which the supervisor collects for a reload's trial to replay.
    sample = RequestSample(
        config.replay_sample_requests, config.replay_sample_bytes, config.replay_sample_seconds
    )
    worker_config = replace(
        worker_config, wiring=replace(worker_config.wiring, request_sample=sample)
    )
    sampler = SampleServer(Path(store_path), sample)
    sampler.start()
    try:
        try:  # the generation this worker starts with: its follower goes on from it
            first = store.read_config(config.max_config_bytes)
        except BuildError as exc:
            _log.error("not serving %s: %s", config.path, exc)
            code = 1
        else:

            def role(local: LocalDecisions) -> WorkerRole:
                return WorkerRole(config, store, first, local, parent, heartbeat, base)

            code = serve(worker_config, sock, role=role)  # stops the role's follower
    finally:
        heartbeat.stop()
        sampler.stop()
    exit_within(code)
    raise SystemExit(code)


class _StandIn:
    """The value a trial gives an entry every worker carries over (it is never fetched)."""


def _stand_ins(
    types: resource.Registry, loaded: LoadedConfig, carried: tuple[str, ...]
) -> resource.Manager | None:
    """A started Manager holding a :class:`_StandIn` for each entry of ``loaded`` in ``carried``.

    A build with it as ``carry_over`` adopts those entries (same fingerprints)
    instead of fetching them, as a worker's reload adopts its serving values.
    """
    if not carried:
        return None
    kept = tuple(e for e in loaded.entries if e.name in carried)
    stand_in = _StandIn()
    registry = resource.Registry()
    for schema in types.all():
        registry.register(schema, lambda params: lambda: stand_in)
    donor = resource.Manager(registry)
    try:
        donor.load_from_root_config(replace(loaded, entries=kept, problems=()))
        donor.start()
    except BaseException:
        donor.stop()
        raise
    return donor


def _in_time(took: float, config: Config) -> dict[str, object]:
    """The trial's reply for a build that took ``took`` seconds: ok within the bound."""
    limit = config.build_timeout_seconds
    if took <= limit:
        return {"ok": True}
    reason = (
        f"building it took {took:.1f}s in a trial worker, over the {limit:g}s a worker "
        "may take (--build-timeout-seconds): the workers could not build it in time"
    )
    return {"step": "start", "reason": reason}


def trial_responder(config: Config) -> Responder:
    """What a trial answers replayed requests with: the responder a worker serves with."""
    return config.wiring.responder or default_responder(
        config.max_items, None, config.max_answer_bytes
    )


def answer_trial(reply: Connection, outcome: dict[str, object], snap: Snapshot | None) -> None:
    """Send a trial's ``outcome`` to the supervisor, then close what it built (``snap``:
    pools, threads) before the process exits, within ``_TRIAL_TEARDOWN_SECONDS``."""
    with contextlib.suppress(OSError):  # the supervisor gave up on this trial: no one to tell
        reply.send_bytes(orjson.dumps(outcome))
    reply.close()
    if snap is not None:
        snap.retire()
        snap.wait_closed(_TRIAL_TEARDOWN_SECONDS)


def trial_main(
    config: Config,
    store_path: str,
    data: bytes,
    reply: Connection,
    parent_pid: int,
    carried: tuple[str, ...] = (),
    sample: tuple[SampledRequest, ...] | None = None,
) -> None:
    """A trial process: build ``data`` as a worker would, send the outcome, tear down, exit.

    ``carried``: the per-worker entries every worker carries over from the
    config it serves (unchanged: no worker fetches them again), so the trial
    stands in for them rather than fetching them. The reply is ``{"ok": true}``
    or ``{"step": ..., "reason": ...}`` (the :class:`BuildError` one process
    would raise, already redacted; or a build that took longer than
    ``build_timeout_seconds``, which workers could not finish in time).
    ``sample``: the pod's recent requests, replayed with the config's
    ``warmup_requests`` once it is built (a reload; None: no replay); the reply
    carries the replay's ``report`` (``server/_replay.py``).
    """
    die_with_parent(parent_pid)
    configure_logging(config.log_level, config.log_format)
    install_log_mask(SnapshotHolder())  # DSN passwords, as the supervisor's own lines
    snap = donor = None
    try:
        import_plugins(config.plugins)
        settings = worker_settings(config, MappedStore(store_path))
        assert settings.wiring.registry is not None
        builder = Builder(settings)
        loaded = builder.load(data)  # parsed once: the stand-ins and the build read it
        donor = _stand_ins(settings.wiring.registry, loaded, carried)
        began = time.monotonic()
        snap = builder.build(loaded, carry_over=donor)
        outcome: dict[str, object] = _in_time(time.monotonic() - began, config)
        if outcome.get("ok") and sample is not None:  # the pod's sample, then it may serve
            replay = CandidateReplay(config, trial_responder(config), lambda: list(sample))
            report = replay(snap, data)
            outcome["report"] = report
    except BuildError as exc:  # bounded: MAX_ERROR_BYTES, a replay's report a few KiB
        outcome = {"step": exc.step, "reason": exc.reason, "report": exc.report}
    except Exception as exc:  # not a build step's error: still an answer, never a hang
        text = resource.lowlevel.redact(f"{type(exc).__name__}: {exc}")
        outcome = {"step": "start", "reason": capped(text)}
    answer_trial(reply, outcome, snap)
    if donor is not None:
        donor.stop()
    exit_within(0)
    raise SystemExit(0)
