"""A value trial: a process with an engine replays a shared value the supervisor fetched.

Under ``--workers N`` the supervisor fetches a shared value (its type has a
codec) and has no engine to replay it with. Before it publishes a refreshed
value of a ``"replay": true`` entry, it stages the value's files in the store
(written, not named in the manifest: no worker maps them) and starts this
process (``server/workers/supervisor/_value_trial.py``), which:

1. builds the config generation the pod serves exactly as a worker does
   (shared values mapped from the store, per-worker ones started);
2. opens the staged candidate with the type's codec;
3. replays the pod's request sample with the candidate lent in place of the
   live value, each failure checked on the live value too
   (:func:`~server._value_replay.replay_value`, as one process does);
4. answers ``{"ok": true, "report": ...}`` or ``{"step": "replay", "reason":
   ..., "report": ...}`` (or the build's step and reason when the serving config
   could not be built), tears everything down and exits without serving.

An entry the serving config does not name (a reload renamed it meanwhile)
has nothing to answer with: accepted, unreplayed.

Bounds: the replay's (``--replay-seconds``, each request under
``min(--request-timeout-ms, what is left)``); the build's own (``start_timeout``);
the supervisor kills the process past its trial bound. The reply is at most
``TRIAL_REPLY_MAX_BYTES`` (a capped error, a report of a few KiB).
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from pineapple import resource
from pineapple._error_text import capped
from pineapple.resource.lowlevel import call_hook

from ..._build import Builder, import_plugins
from ..._build_error import BuildError
from ..._config import Config
from ..._log_format import configure_logging
from ..._logmask import install_log_mask
from ..._request_sample import SampledRequest
from ..._snapshot import Snapshot, SnapshotHolder
from ..._value_replay import replay_value
from ...http._serving import exit_within
from .._store_format import codec_of
from ._main import answer_trial, die_with_parent, trial_responder, worker_settings
from ._mapping import MappedStore

__all__ = ["value_trial_main"]


def value_trial_main(
    config: Config,
    store_path: str,
    name: str,
    candidate: tuple[str, int],
    reply: Connection,
    parent_pid: int,
    sample: tuple[SampledRequest, ...],
) -> None:
    """Replay ``sample`` on the serving config with the staged ``candidate`` (its stem in
    the store and generation) lent for ``name``; send the outcome, tear down, exit."""
    die_with_parent(parent_pid)
    configure_logging(config.log_level, config.log_format)
    install_log_mask(SnapshotHolder())  # DSN passwords, as the supervisor's own lines
    snap: Snapshot | None = None
    value: Any = None
    try:
        import_plugins(config.plugins)
        store = MappedStore(store_path)
        # The generation the pod serves, leased until this process exits.
        _, data = store.read_config(config.max_config_bytes)
        builder = Builder(worker_settings(config, store))
        loaded = builder.load(data)
        entry = next((e for e in loaded.entries if e.name == name), None)
        codec = None if entry is None else codec_of(config.resource_types(), entry.type)
        if codec is None:
            outcome: dict[str, object] = {"ok": True, "report": None}
        else:
            snap = builder.build(loaded)
            stem, generation = candidate
            value = codec.open(store.path / stem, generation)
            timeout_ms = config.request_timeout_ms
            report = replay_value(
                snap,
                snap.manager,
                name,
                value,
                trial_responder(config),
                list(sample),
                config.replay_seconds,
                timeout_ms / 1000.0 if timeout_ms > 0 else None,
            )
            outcome = {"ok": not report.failed, "report": report.to_dict()}
            if report.failed:
                outcome.update(step="replay", reason=report.summary())
    except BuildError as exc:  # the serving config, built here: bounded by MAX_ERROR_BYTES
        reason = f"the serving config could not be built to replay it ({exc.step}): {exc.reason}"
        outcome = {"step": exc.step, "reason": capped(reason)}
    except Exception as exc:  # not a build step's error: still an answer, never a hang
        text = resource.lowlevel.redact(f"{type(exc).__name__}: {exc}")
        outcome = {"step": "start", "reason": capped(text)}
    answer_trial(reply, outcome, snap)
    if value is not None:  # its mapping, before the exit
        call_hook(value, "close", label=f"candidate of {name}")
    exit_within(0)
    raise SystemExit(0)
