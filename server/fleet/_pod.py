"""``FleetPod``: a pod's fleet parts, assembled once where the server is (``server/_run.py``).

One process or ``--workers N``, the pod holds one :class:`FleetPod`: the link
to the store, the cache, the consumer (whose registry makes the fetchers of
the shared types read the fleet), the config source (without a config file),
the follower and the heartbeat. The process that fetches shared resources
follows the fleet: the single process (its serving snapshot's Manager), or
the supervisor (its authority's publisher Manager; its workers map what it
publishes, unchanged). :meth:`FleetPod.attach_service` and
:meth:`FleetPod.attach_authority` say which, once the first config serves.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from pineapple import resource

from .._config import Config, FleetSettings, Wiring
from .._reload_policy import ReloadOutcome
from .._service import Service
from ..workers.supervisor._authority import ConfigAuthority
from ._cache import SnapshotCache
from ._consumer import FLEET_SOURCE, FleetConsumer, fleet_registry
from ._fleet_config import FleetConfigSource
from ._follower import FleetFollower
from ._heartbeat import FleetHeartbeat, default_pod_id
from ._link import StoreLink
from ._open import open_store
from ._store import FleetLimits

__all__ = ["FleetPod"]

_log = logging.getLogger("pineapple.fleet")


class FleetPod:
    """The fleet parts of one pod (see module docs)."""

    def __init__(self, settings: FleetSettings) -> None:
        self.settings = settings
        limits = FleetLimits(
            max_snapshot_bytes=settings.max_snapshot_bytes,
            download_timeout=settings.download_timeout,
            keep_generations=settings.keep_generations,
            max_bucket_bytes=max(FleetLimits.max_bucket_bytes, settings.max_snapshot_bytes),
        )
        self.link = StoreLink(
            settings.url,
            lambda: open_store(settings.url, timeout=settings.timeout, limits=limits),
        )
        cache = SnapshotCache(Path(settings.cache_dir), settings.keep_generations)
        self.consumer = FleetConsumer(self.link, cache, limits)
        self.config_source = FleetConfigSource(self.consumer) if settings.follow_config else None
        self.pod_id = settings.pod_id or default_pod_id()
        self.heartbeat = FleetHeartbeat(
            self.link,
            self.pod_id,
            self.consumer.served,
            lambda: None if self.config_source is None else self.config_source.revision,
            interval=settings.heartbeat_seconds,
        )
        self.consumer.on_change = self.heartbeat.changed
        # A failed heartbeat or probe says the store is down before any refresh would.
        self.link.on_down.append(self.consumer.store_down)
        self.follower: FleetFollower | None = None
        self._registry: resource.Registry | None = None

    def wiring(self, config: Config, base: resource.Registry) -> Wiring:
        """``config``'s wiring with the fleet's registry over ``base`` and, without a config
        file, the fleet's config as its source."""
        if self._registry is None:
            self._registry = fleet_registry(base, self.consumer)
        source = self.config_source or config.wiring.config_source
        return dataclasses.replace(config.wiring, registry=self._registry, config_source=source)

    # -- who follows ---------------------------------------------------------------------

    def attach_service(self, service: Service) -> None:
        """One process: follow into ``service``'s serving snapshot."""

        def refresh(name: str) -> None:
            snap = service.holder.acquire()
            if snap is None:
                return
            try:
                snap.manager.refresh(name)
            finally:
                snap.release()

        def names() -> list[str]:
            snap = service.holder.acquire()
            if snap is None:
                return []
            try:
                return _fleet_names(snap.manager)
            finally:
                snap.release()

        service.reloader.listeners.append(self._on_reload)
        self._follow(refresh, names, lambda: service.reloader.reload("watch"))

    def attach_authority(self, authority: ConfigAuthority) -> None:
        """``--workers N``: follow into the supervisor's publisher (workers map from it)."""

        def refresh(name: str) -> None:
            publisher = authority.publisher
            if publisher is not None:
                publisher.refresh(name)

        def names() -> list[str]:
            publisher = authority.publisher
            return [] if publisher is None else _fleet_names(publisher)

        authority.policy.listeners.append(self._on_reload)
        self._follow(refresh, names, lambda: authority.reload("watch"))

    def _follow(
        self,
        refresh: Callable[[str], object],
        names: Callable[[], list[str]],
        reload: Callable[[], ReloadOutcome],
    ) -> None:
        if self.config_source is not None:
            self.config_source.accepted()  # the first config serves
        self.follower = FleetFollower(
            self.link,
            refresh,
            names,
            lambda: bool(self.consumer.stale()),
            reload if self.config_source is not None else None,
            poll_seconds=self.settings.poll_seconds,
        )
        self.link.on_down.append(lambda why: self._wake_follower())
        self.follower.start()
        self.heartbeat.start()

    def _wake_follower(self) -> None:
        if self.follower is not None:
            self.follower.nudge()

    def _on_reload(self, outcome: ReloadOutcome) -> None:
        """A reload's outcome: an accepted fleet config is kept (and its revision beaten)."""
        if self.config_source is not None and outcome.result in ("ok", "unchanged"):
            self.config_source.accepted()

    def close(self) -> None:
        """Stop following and beating (the heartbeat's key is deleted), close the store."""
        if self.follower is not None:
            self.follower.stop()
        self.heartbeat.stop()
        self.link.close()


def _fleet_names(manager: resource.Manager) -> list[str]:
    """The resources of ``manager`` read from the fleet."""
    return [st.name for st in manager.status() if st.source == FLEET_SOURCE]
