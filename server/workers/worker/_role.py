"""``WorkerRole``: what makes a ``Service`` a worker of ``--workers N``.

A worker's service is given its role at construction (``Service(config, role)``),
with everything it needs already decided: the generation it starts with and
its bytes (read from the store before the service is made), its follower
(``_follower.py``: data and config generations, from that generation on) and
its decisions (``SupervisorLink``: the supervisor's, caught up through that
follower's pass). Nothing is wired after the fact.

Guarantees:
- The follower starts only once the first snapshot serves (:meth:`start`),
  and the heartbeat reports the follower's health from then on; before that it
  beats while the worker is within its start bound (``_liveness``).
- :meth:`stop` returns within the follower's bound (one poll, a few times over).
"""

from __future__ import annotations

from multiprocessing.connection import Connection

from pineapple import resource

from ..._config import Config
from ..._decisions import LocalDecisions
from ..._shadow import Shadow
from ..._stage import StageDecisions
from .._control import CONTROL_READ_SECONDS
from .._liveness import Heartbeat
from ._follower import ConfigFollow, Follower
from ._history_link import HistoryLink
from ._mapping import MappedStore
from ._stage_follow import StageFollow, StageLink
from ._supervisor_link import SupervisorChannel, SupervisorLink

__all__ = ["WorkerRole"]


class WorkerRole:
    """A worker's decisions, follower and first config (a ``server._service.Role``)."""

    def __init__(
        self,
        config: Config,
        store: MappedStore,
        first: tuple[int, bytes],
        local: LocalDecisions,
        parent: Connection,
        heartbeat: Heartbeat,
        registry: resource.Registry,
    ) -> None:
        """``first``: the generation the worker starts with and its bytes; ``registry``:
        the worker's resource types before mapping (those with a codec are shared)."""
        generation, self.first_config = first
        # A reload may wait start_timeout for the lock, then build (a trial's bound).
        build = max(config.start_timeout, config.build_timeout_seconds)
        channel = SupervisorChannel(store, config.start_timeout + build + CONTROL_READ_SECONDS)
        self.follower = Follower(
            store,
            local.holder,
            parent,
            config=ConfigFollow(
                local.reloader,
                store,
                served=generation,
                max_bytes=config.max_config_bytes,
                on_failure=channel.cannot_build,
            ),
            # A pass may wait start_timeout for the reload lock, then build; a build that
            # takes over twice what the trial allowed it counts as stuck (_liveness).
            pass_timeout=config.start_timeout + 2 * config.build_timeout_seconds,
            registry=registry,
        )
        self.decisions = SupervisorLink(store, channel, local, self.follower, registry=registry)
        self.history = HistoryLink(self.decisions, local.holder, config.max_config_bytes)
        """The config history's routes: read from the pod's status, decided by the supervisor."""
        self._heartbeat = heartbeat
        self._config = config
        self._local = local
        self._channel = channel
        self._stage_follow: StageFollow | None = None

    def staging(self, shadow: Shadow) -> StageDecisions:
        """The stage routes' decisions (the supervisor's), over this worker's ``shadow``."""
        follow = StageFollow(
            self._config,
            self._local.reloader,
            shadow,
            self.decisions.pod,
            self._channel,
            self._local.holder,
        )
        self._stage_follow = follow
        return StageLink(self._channel, follow)

    def start(self) -> None:
        """Follow the supervisor, and beat as a serving worker while following."""
        self.follower.start()
        self._heartbeat.serve_while(self.follower.following)
        if self._stage_follow is not None:
            self._stage_follow.start()

    def stop(self) -> None:
        """Stop following (idempotent)."""
        self.follower.stop()
        if self._stage_follow is not None:
            self._stage_follow.stop()
