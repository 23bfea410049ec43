"""A worker process of ``--workers N``: serve with every shared resource mapped from the store.

The worker builds from the config bytes its supervisor accepted
(``SharedConfigSource``), maps shared snapshots (``mapped_registry``), follows
new generations and config generations (``Follower``), and forwards admin
decisions to the supervisor (``SupervisorLink``). See ``server/workers/supervisor/_supervisor.py``.

A *trial* process (:func:`trial_main`) is a worker that builds one candidate
config exactly as a worker would, answers whether it could, tears it down and
exits without serving (the supervisor's side is ``server/workers/supervisor/_trial.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
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

from ..._build import Builder, default_responder, import_plugins
from ..._build_error import BuildError
from ..._config import Config, ConfigSource
from ..._log_format import configure_logging
from ..._logmask import install_log_mask
from ..._replay import CandidateReplay
from ..._request_sample import SampledRequest
from ..._service import Service
from ..._snapshot import SnapshotHolder
from ...http._serving import exit_within, serve
from ...metrics._pod_metrics import PodMetrics
from .._control import CONTROL_READ_SECONDS
from .._liveness import START_SLACK_SECONDS, Heartbeat
from .._sample_channel import SampleServer
from .._store_format import METRICS_DIR, codec_of
from ._follower import ConfigFollow, Follower
from ._mapping import MappedStore, mapped_registry
from ._supervisor_link import SharedConfigSource, SupervisorLink

__all__ = ["TRIAL_REPLY_MAX_BYTES", "trial_main", "worker_main", "worker_settings"]

TRIAL_REPLY_MAX_BYTES = 64 * 1024
"""The largest trial reply read (its message is at most ``MAX_ERROR_BYTES``: escaped, it fits)."""
_TRIAL_TEARDOWN_SECONDS = 5.0

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
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
    base = config.wiring.registry or resource.lowlevel.default_registry()
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
) -> None:
    """A worker process: serve with every shared resource read from the store.

    ``beats``: the pipe on which it tells the supervisor it still follows (``_liveness``).
    """
    _die_with_parent(parent_pid)
    began = time.monotonic()
    start_bound = config.start_timeout + START_SLACK_SECONDS
    heartbeat = Heartbeat(beats, lambda: time.monotonic() - began < start_bound)
    heartbeat.start()
    configure_logging(config.log_level, config.log_format)
    import_plugins(config.plugins)
    store = MappedStore(store_path)
    source = SharedConfigSource(store)
    base = config.wiring.registry or resource.lowlevel.default_registry()
    worker_config = worker_settings(config, store, source)
    followers: list[Follower] = []
    samples: list[SampleServer] = []

    def attach(service: Service) -> None:
        source.served = source.last_read  # the generation service.start() built
        service.reloader.replay = None  # the supervisor's trial replayed it (_sample_channel)
        samples.append(SampleServer(Path(store_path), service.sample))
        samples[-1].start()
        # A reload may wait start_timeout for the lock, then build (a trial's bound).
        build = max(config.start_timeout, config.build_timeout_seconds)
        timeout = config.start_timeout + build + CONTROL_READ_SECONDS
        link = SupervisorLink(store, source, timeout, service.local, registry=base)
        follower = Follower(
            store,
            service.holder,
            parent,
            config=ConfigFollow(service.reloader, source, on_failure=link.cannot_build),
            # A pass may wait start_timeout for the reload lock, then build; a build that
            # takes over twice what the trial allowed it counts as stuck (_liveness).
            pass_timeout=config.start_timeout + 2 * config.build_timeout_seconds,
            registry=base,
        )
        link.catch_up = follower.follow
        service.decisions = link
        follower.start()
        followers.append(follower)
        heartbeat.healthy = follower.following
        heartbeat.serving = True

    try:
        code = serve(worker_config, sock, attach)
    finally:
        heartbeat.stop()
        for follower in followers:
            follower.stop()
        for sampler in samples:
            sampler.stop()
    exit_within(code)
    raise SystemExit(code)


class _StandIn:
    """The value a trial gives an entry every worker carries over (it is never fetched)."""


def _stand_ins(
    builder: Builder, types: resource.Registry, data: bytes, carried: tuple[str, ...]
) -> resource.Manager | None:
    """A started Manager holding a :class:`_StandIn` for each entry of ``data`` in ``carried``.

    A build with it as ``carry_over`` adopts those entries (same fingerprints)
    instead of fetching them, as a worker's reload adopts its serving values.
    """
    if not carried:
        return None
    loaded = builder.load(data)
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
    ``warmup_requests`` once it is built (a reload; None: no replay); a
    refusal's reply carries the replay's ``report`` (``server/_replay.py``).
    """
    _die_with_parent(parent_pid)
    configure_logging(config.log_level, config.log_format)
    install_log_mask(SnapshotHolder())  # DSN passwords, as the supervisor's own lines
    snap = donor = None
    try:
        import_plugins(config.plugins)
        settings = worker_settings(config, MappedStore(store_path))
        assert settings.wiring.registry is not None
        builder = Builder(settings)
        donor = _stand_ins(builder, settings.wiring.registry, data, carried)
        began = time.monotonic()
        snap = builder.build(data, carry_over=donor)
        outcome: dict[str, object] = _in_time(time.monotonic() - began, config)
        if outcome.get("ok") and sample is not None:  # the pod's sample, then it may serve
            responder = config.wiring.responder or default_responder(
                config.max_items, None, config.max_answer_bytes
            )
            report = CandidateReplay(config, responder, lambda: list(sample))(snap, data)
            outcome["report"] = report
    except BuildError as exc:  # bounded: MAX_ERROR_BYTES, a replay's report a few KiB
        outcome = {"step": exc.step, "reason": exc.reason, "report": exc.report}
    except Exception as exc:  # not a build step's error: still an answer, never a hang
        text = resource.lowlevel.redact(f"{type(exc).__name__}: {exc}")
        outcome = {"step": "start", "reason": capped(text)}
    with contextlib.suppress(OSError):  # the supervisor gave up on this trial: no one to tell
        reply.send_bytes(orjson.dumps(outcome))
    reply.close()
    if snap is not None:  # what the build started (pools, threads) closes before the exit
        snap.retire()
        snap.wait_closed(_TRIAL_TEARDOWN_SECONDS)
    if donor is not None:
        donor.stop()
    exit_within(0)
    raise SystemExit(0)
