"""``FleetConfigSource``: the fleet's config (``CONFIG["current"]``) for a pod without a file.

Read from the store; when it cannot be reached, the config the pod last
accepted, from its cache (``SnapshotCache.config``).
"""

from __future__ import annotations

import logging
from typing import Any

from .._build_error import BuildError
from ._consumer import STALE_REASON, FleetConsumer
from ._errors import FleetError, StoreUnavailableError
from ._store import CONFIG, CONFIG_KEY

__all__ = ["FleetConfigSource"]

"""The key of the fleet's config in :data:`CONFIG`."""

_log = logging.getLogger("pineapple.fleet")


class FleetConfigSource:
    """The fleet's config (``CONFIG["current"]``) as a pod's config source (no file).

    Read from the store; when it cannot be reached, the config the pod last
    accepted from its cache. :meth:`accepted` (the reload's outcome was ``ok``)
    keeps the bytes last read in the cache, so a refused config is never the
    one a restarted pod starts from.

    Guarantees: ``last_read`` is written by :meth:`read`, which the reload
    policy's lock serialises; ``revision`` by :meth:`accepted` under the same lock.
    """

    def __init__(self, consumer: FleetConsumer) -> None:
        self._consumer = consumer
        self.last_read: tuple[int, bytes] | None = None
        """``(revision, bytes)`` last handed to a reload."""
        self.revision = 0
        """The config revision the pod serves (0: none yet)."""
        self.stale: str | None = None
        """Why the config served may not be the fleet's newest (None: the store answered)."""
        self._saved: tuple[int, bytes] | None = None

    def read(self, max_bytes: int) -> bytes:
        """The fleet's config bytes; a ``BuildError`` (step ``read``) when there are none."""
        consumer = self._consumer
        try:
            quick = self.revision == 0 and consumer.cache.config() is not None
            record = consumer.link.run(lambda store: store.get(CONFIG, CONFIG_KEY), quick=quick)
        except StoreUnavailableError as exc:
            cached = consumer.cache.config()
            if cached is None:
                raise BuildError(
                    "read", f"{exc}; the fleet cache {consumer.cache.root} holds no config"
                ) from None
            self.stale = (
                f"{STALE_REASON}: the fleet store {consumer.link.url} is unavailable ({exc});"
                f" serving config revision {cached[0]} from the pod's cache"
            )
            self.last_read = cached
            return self._bounded(cached[1], max_bytes)
        if record is None:
            raise BuildError("read", f"the fleet store {consumer.link.url} holds no config")
        self.stale = None
        self.last_read = (record.revision, record.value)
        return self._bounded(record.value, max_bytes)

    def describe(self) -> dict[str, Any]:
        """What ``GET /config`` shows under ``config_source`` (``/readyz``: its ``stale``)."""
        return {
            "kind": "fleet",
            "store": self._consumer.link.url,
            "revision": self.revision or None,
            "stale": self.stale,
        }

    def _bounded(self, data: bytes, max_bytes: int) -> bytes:
        if len(data) > max_bytes:
            raise BuildError(
                "read",
                f"the fleet config is {len(data)} bytes, over --max-config-bytes {max_bytes}",
            )
        return data

    def accepted(self) -> None:
        """The bytes last read serve now: keep them (and their revision) in the cache."""
        last = self.last_read
        if last is None or last == self._saved:
            return
        self._saved = last
        self.revision = last[0]
        try:
            self._consumer.cache.save_config(*last)
        except (FleetError, OSError) as exc:
            _log.warning("cannot keep the fleet config in the cache: %s", exc)
        self._consumer.on_change()
