"""``HistoryPod``: the config history assembled into a process model, once (``_run.py``).

One process: the history is the ``Reloader``'s config source and listener,
the service's ``history`` (:class:`~server._history_decisions.LocalHistory`)
and the keeper of its resource pins. ``--workers N``: the same around the
supervisor's ``ConfigAuthority`` (the config source of its wiring, never
given to the workers), with the history posted in the pod's status
(``history``) and the control requests of
:data:`~server._history_decisions.CONTROL_OPS` answered by the supervisor;
each worker answers the routes from them (``server/workers/worker/_history_link.py``).

Not under ``--fleet``: the fleet's store keeps the fleet's config revisions
and its rollback (``pineapple fleet config-rollback``), and a pod serves
what the fleet says; ``_run.py`` assembles no history for a fleet pod.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

from ._config import Config, Wiring
from ._config_history import ConfigHistory, HistoryLimits, HistorySource
from ._decisions import ACTIONS
from ._history_decisions import (
    CONTROL_OPS,
    LocalHistory,
    RememberingDecisions,
    remember,
    restore_resource_pins,
)
from ._kept_values import KeptValues
from ._reload_policy import ReloadOutcome
from ._service import Service
from .workers.supervisor._authority import ConfigAuthority

__all__ = ["HistoryPod"]

_log = logging.getLogger("pineapple.server")


class HistoryPod:
    """The config history of one server (see module docs)."""

    def __init__(self, config: Config) -> None:
        assert config.state_dir is not None
        self.config = config
        self.history = ConfigHistory(
            Path(config.state_dir),
            HistoryLimits(config.history_max_count, config.history_max_bytes),
            config.max_config_bytes,
        )
        self.values = KeptValues(
            self.history.state_dir, config.history_max_value_bytes, config.resource_types()
        )
        """The values of the resources an admin pinned, kept beside the history."""

    @classmethod
    def open(cls, config: Config) -> HistoryPod | None:
        """The history of ``config``; None without a state directory or in a fleet."""
        if config.state_dir is None or config.fleet is not None:
            return None
        return cls(config)

    def source(self, wiring: Wiring) -> HistorySource:
        """The reload authority's config source over ``wiring``'s (the file)."""
        path, base = self.config.path, wiring
        return self.history.source(lambda max_bytes: base.read_config(path, max_bytes))

    def wired(self, config: Config) -> Config:
        """``config`` reading through the history (one process)."""
        wiring = dataclasses.replace(config.wiring, config_source=self.source(config.wiring))
        return dataclasses.replace(config, wiring=wiring)

    def authority_wiring(self) -> Wiring:
        """The supervisor's authority's wiring (never given to the workers)."""
        wiring = self.config.wiring
        return dataclasses.replace(wiring, config_source=self.source(wiring))

    def attach_service(self, service: Service) -> None:
        """One process: keep what the reloader accepts; answer the routes; restore pins."""
        reloader = service.reloader
        if reloader.last is not None:
            self.history.accepted(reloader.last)  # the config it started with
        reloader.listeners.append(self.history.accepted)

        def serving() -> str | None:
            snap = service.holder.current
            return None if snap is None else snap.info.content_hash

        service.history = LocalHistory(
            self.history, lambda t, f: reloader.reload(t, force=f), serving
        )
        values = self.values

        def keep(name: str) -> dict[str, Any] | None:
            snap = service.holder.acquire()
            if snap is None:
                return None
            try:
                return values.keep(snap.manager, name)
            finally:
                snap.release()

        service.decisions = RememberingDecisions(service.decisions, self.history, keep, values)
        snap = service.holder.acquire()
        if snap is not None:
            try:
                restore_resource_pins(self.history, values, snap.manager)
            finally:
                snap.release()

    def attach_authority(self, authority: ConfigAuthority) -> None:
        """``--workers N``: the same around the supervisor's authority."""
        digest = authority.serving_hash
        if digest is not None:  # its start records no outcome: the config it started with
            self.history.accepted(ReloadOutcome("ok", "start", time.time(), 0.0, digest))
        authority.policy.listeners.append(self.history.accepted)
        authority.rolled_back.append(self.history.auto_rolled_back)

        def serving() -> str | None:
            return authority.serving_hash

        local = LocalHistory(self.history, lambda t, f: authority.reload(t, force=f), serving)
        authority.extra_status["history"] = local.history

        def middleware(request: dict[str, Any], decide: Any) -> dict[str, Any]:
            op = request.get("op")
            if op in CONTROL_OPS:
                return local.handle(request)
            answer: dict[str, Any] = decide(request)
            if op in ACTIONS and op != "refresh":
                remember(self.history, self.values, str(op), str(request.get("name")), answer, keep)
            return answer

        def keep(name: str) -> dict[str, Any] | None:
            publisher = authority.publisher  # the value the workers map
            return None if publisher is None else self.values.keep(publisher, name)

        authority.middleware = middleware
        if authority.publisher is not None:
            restore_resource_pins(self.history, self.values, authority.publisher)
        # Posted now, with the history, before any worker starts: the board's first post
        # (before this) had none, and its thread recomputes only every RECOMPUTE_SECONDS.
        authority.board.post()
