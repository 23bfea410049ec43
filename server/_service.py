"""``Service``: one server's moving parts, started and stopped in order.

Start: built-ins and plugins -> first snapshot (read -> Engine -> resources -> start ->
deps) -> watcher -> the role. Stop: mark draining (``/readyz`` turns 503) -> stop the
watcher -> refuse reloads -> retire the serving snapshot -> wait until its
last request has finished and its resources are closed -> stop the role.

A :class:`Role` is what a process does beside serving its snapshot, given
at construction: a worker of ``--workers N`` gets its decisions (the
``SupervisorLink``), its follower and the bytes of its first config
(``server/workers/worker/_role.py``). Without one the process decides alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from ._admin import Network, parse_trusted_proxies
from ._build import Builder, default_responder, import_plugins
from ._config import Config, Responder
from ._decisions import Decisions, LocalDecisions
from ._history_decisions import HistoryDecisions
from ._parse_budget import ParsedBytes
from ._reloader import Reloader
from ._replay import CandidateReplay
from ._request_sample import RequestSample
from ._shadow import Shadow
from ._snapshot import Snapshot, SnapshotHolder
from ._stage import LocalStage, StageDecisions
from ._tracing import open_tracing
from ._value_replay import ValueReplay
from ._watcher import ConfigWatcher
from .metrics._metrics import ServerMetrics

__all__ = ["Role", "Service"]

_log = logging.getLogger("pineapple.server")


class Role(Protocol):
    """What a :class:`Service` does beside serving: made once, from its ``LocalDecisions``."""

    @property
    def decisions(self) -> Decisions:
        """Where routes and signals ask for decisions and statuses."""
        ...

    @property
    def first_config(self) -> bytes | None:
        """The bytes of the first config (None: the service reads them)."""
        ...

    @property
    def history(self) -> HistoryDecisions | None:
        """Where the config-history routes ask (None: the service's own, if any)."""
        ...

    def staging(self, shadow: Shadow) -> StageDecisions | None:
        """Where the stage routes ask, over this process's ``shadow`` (None: not offered)."""
        ...

    def start(self) -> None:
        """Begin, once the first snapshot serves."""
        ...

    def stop(self) -> None:
        """End (idempotent), once the service has stopped."""
        ...


class Service:
    """Holder, builder, reloader, watcher and metrics of one server process.

    >>> service = Service(Config("configs/demo.json"))  # doctest: +SKIP
    >>> service.start()                                  # doctest: +SKIP
    """

    def __init__(
        self, config: Config, role: Callable[[LocalDecisions], Role] | None = None
    ) -> None:
        self.config = config
        self.holder = SnapshotHolder()
        self.metrics = ServerMetrics(lambda: self.holder.current, config.wiring.pod_metrics)
        self.tracing = open_tracing(config.tracing)
        """This process's spans (``--tracing``); None: off."""
        self.builder = Builder(config, self.metrics, self.tracing)
        self.reloader = Reloader(config, self.holder, self.builder, self.metrics)
        self.parsed_bytes = ParsedBytes(config.max_inflight_body_bytes or None)
        """The parse's share of ``--max-inflight-body-bytes`` (the default responder's)."""
        responder = config.wiring.responder or default_responder(
            config.max_items, self.parsed_bytes, config.max_answer_bytes
        )
        sample = config.wiring.request_sample
        if sample is None:  # this process's own, which its reloads replay (_replay.py)
            sample = RequestSample(
                config.replay_sample_requests,
                config.replay_sample_bytes,
                config.replay_sample_seconds,
            )
            self.reloader.target.replay = CandidateReplay(config, responder, sample.requests)
        self.responder: Responder = responder
        self.request_sample: RequestSample | None = sample if sample.enabled else None
        """Where ``/execute`` records the requests it answers 200 (None: no sample kept)."""
        # A refreshed value of a ``replay`` entry answers the same sample first.
        self.builder.value_replay = ValueReplay(
            config, responder, sample.requests, self.holder
        ).check
        timeout_ms = config.request_timeout_ms
        self.shadow = Shadow(
            responder,  # a candidate's answers are not live ones: never sampled
            config.shadow_queue,
            timeout_ms / 1000.0 if timeout_ms > 0 else None,
            self.metrics.observe_shadow,
        )
        """The staged candidate this process shadows (``server/_shadow.py``)."""
        self.admin_token = config.resolved_admin_token()
        self.trusted_proxies: tuple[Network, ...] = parse_trusted_proxies(config.trust_proxy)
        self.watcher: ConfigWatcher | None = None
        self.draining = False
        """``/readyz`` answers 503: set at SIGTERM (``server/http/_graceful.py``) and by
        :meth:`stop`."""
        self.drain_deadline: float | None = None
        """Monotonic time by which :meth:`stop` is done waiting for requests (None: the
        full ``drain_seconds`` from the call); the server sets it when its drain begins."""
        self.local = LocalDecisions(self.holder, self.reloader, config.path, lambda: self.draining)
        """This process's own decisions and statuses."""
        self.role = None if role is None else role(self.local)
        """What this process does beside serving (a worker's link and follower), if anything."""
        self.decisions: Decisions = self.local if self.role is None else self.role.decisions
        """Where routes and signals ask for decisions and statuses (a worker of
        ``--workers N``: its ``SupervisorLink``)."""
        self.history: HistoryDecisions | None = None if self.role is None else self.role.history
        """Where the config-history routes ask (None: no history; a worker's comes with its
        role, one process's is set where the server is assembled, ``server/_history_pod.py``)."""
        self.stages: StageDecisions | None = (
            LocalStage(config, self.reloader, self.shadow, self.holder)
            if self.role is None
            else self.role.staging(self.shadow)
        )
        """Where the stage routes ask (``server/_stage.py``; None: staging is not offered)."""
        self.started = False
        self._hand_fetchers_closed = False

    def start(self) -> Snapshot:
        """Build and publish the first snapshot, then watch; :class:`BuildError` on failure."""
        import_plugins(self.config.plugins)
        snap = self.reloader.load_initial(None if self.role is None else self.role.first_config)
        if self.config.watch:
            watcher = ConfigWatcher(
                self.config.path,
                self.reloader.reload,
                debounce_seconds=self.config.debounce_seconds,
                poll_seconds=self.config.poll_seconds,
                stop_timeout=self.config.start_timeout,
            )
            try:
                watcher.start()
            except Exception:
                self.holder.close()
                raise
            self.watcher = watcher
        if self.role is not None:
            self.role.start()
        self.started = True
        _log.info(
            "serving config %s (snapshot %d, %d resources)",
            snap.info.content_hash[:12],
            snap.serial,
            len(snap.manager.names()),
        )
        return snap

    def stop(self) -> None:
        """Drain and tear down (idempotent); returns once every resource is closed."""
        self.draining = True
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        staged = self.shadow.close()  # a staged candidate serves nobody after this
        if staged is not None:
            staged.candidate.retire()
        self.reloader.close()
        snap = self.holder.close()
        seconds = self.config.drain_seconds
        if self.drain_deadline is not None:  # what is left of the server's drain
            seconds = max(0.0, self.drain_deadline - time.monotonic())
        if staged is not None:
            staged.candidate.wait_closed(seconds)
        if snap is not None and not snap.wait_closed(seconds):
            _log.warning(
                "snapshot %d still has %d request(s) after %.0fs; not waiting longer",
                snap.serial,
                max(0, snap.refs),
                self.config.drain_seconds,
            )
        if self.role is not None:
            self.role.stop()
        if not self._hand_fetchers_closed:
            self._hand_fetchers_closed = True
            self.config.close_hand_fetchers()
        if self.tracing is not None:
            self.tracing.close()  # idempotent
