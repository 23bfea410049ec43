"""The producer's side of the fleet store: a value the producer accepted, announced once.

The producer is a supervisor whose store is the fleet store (see
``server/workers/_publisher.py``): its publisher Manager fetches every
resource whose type has a fleet codec from the source, and applies the
validators, the memory budget, ``NOT_MODIFIED`` and carry-over as a pod does.
Its fetchers are :class:`FleetPublishingFetcher`: the Manager's ``commit`` hook
(called once a value passed every check, just before it serves) publishes the
value through the :class:`Announcer`; a refused value is never committed, so it
is never announced.

Guarantees:
- Fencing: :meth:`Announcer.publish` first asks the producer whether it still
  holds the lease (``may_publish``) and refuses to publish otherwise
  (:class:`NotLeaderError`); then it reads the resource's announcement (its
  revision ``r`` and generation ``g``) and publishes generation ``g + 1`` with
  the announcement written as a compare-and-set on ``r``. Two producers that
  both believe they lead (a lease that lapsed during a long fetch) can never
  announce the same generation: the second CAS fails
  (``RevisionConflictError``), its snapshot object is removed, and its Manager
  records a failed fetch (nothing swapped, retried with backoff).
- A commit that raises leaves the Manager serving its previous value (the
  Manager's contract for two-phase fetchers), so what the producer serves is
  always what it last announced. The inner fetcher is then rewound to that
  value (``carry_over``), so its change detection does not answer
  ``NOT_MODIFIED`` for a change that was never announced: the next refresh
  reads it again and retries the publish.
- ``_served`` (the value last announced or carried over) is written by
  ``commit`` and ``carry_over`` of one resource, which its Manager serialises
  (the refresh lock around a fetch and its admission; a carry-over happens
  before the Manager starts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pineapple.resource import Fetcher, FetcherFactory, Registry, ResourceSchema
from pineapple.resource.lowlevel import SnapshotCodec, call_hook, hook_of

from ..workers._store_format import entry_key
from ._errors import FleetError
from ._snapshots import Announcement, announced, check_portable, publish_snapshot
from ._store import FleetStore

__all__ = [
    "Announcer",
    "FleetPublishingFetcher",
    "NotLeaderError",
    "fleet_codec",
    "fleet_publishing_registry",
    "source_version",
]

_log = logging.getLogger("pineapple.fleet")

_MAX_VERSION_BYTES = 4096
"""A source version longer than this (as JSON) is not announced (it is a hint, not data)."""


class NotLeaderError(FleetError):
    """The producer does not hold the lease (any more): it publishes nothing."""


class Announcer:
    """Publishes what a producer accepted: a snapshot, then its announcement (fenced).

    ``may_publish()``: whether the producer holds the lease now (checked before
    every publish). ``workdir``: where snapshots are written before upload.
    """

    def __init__(self, store: FleetStore, workdir: Path, may_publish: Callable[[], bool]) -> None:
        self.store = store
        self.workdir = workdir
        self._may_publish = may_publish

    def publish(
        self,
        name: str,
        type_name: str,
        params_hash: str,
        codec: SnapshotCodec,
        value: Any,
        *,
        fresh: bool = False,
    ) -> Announcement:
        """Publish ``value`` as the next generation of ``name``; its announcement.

        ``fresh``: the first value of a new fetcher (a producer that starts or
        takes over). When the announced generation has the same params and the
        same source version (``version_query``'s answer), it holds this data
        already: it is returned and nothing is published.

        ``NotLeaderError`` when the lease is not held, ``RevisionConflictError``
        when another producer announced meanwhile; nothing is announced then.
        """
        if not self._may_publish():
            raise NotLeaderError(f"resource {name!r}: not published, this producer is not leading")
        _, last = announced(self.store, name)
        if fresh and last is not None and _same_source(last, params_hash, value):
            _log.info(
                "%s: generation %d already holds source version %s; not announced again",
                name,
                last.generation,
                last.source_version,
            )
            return last
        announcement = publish_snapshot(
            self.store,
            name=name,
            type_name=type_name,
            params_hash=params_hash,
            codec=codec,
            value=value,
            generation=(last.generation if last is not None else 0) + 1,
            source_version=source_version(value),
            workdir=self.workdir,
        )
        _log.info(
            "published %s generation %d (%d bytes, %s; loaded in %.3fs)",
            name,
            announcement.generation,
            announcement.size,
            announcement.digest,
            float(getattr(value, "load_seconds", 0.0) or 0.0),
        )
        return announcement


def _same_source(last: Announcement, params_hash: str, value: Any) -> bool:
    version = source_version(value)
    return version is not None and (last.params_hash, last.source_version) == (params_hash, version)


def source_version(value: Any) -> str | None:
    """The source's version a value carries (``FeedTable.version``), as JSON; None if none."""
    version = getattr(value, "version", None)
    if version is None:
        return None
    try:
        text = orjson.dumps(version, default=str).decode()
    except TypeError:
        return None
    return text if len(text) <= _MAX_VERSION_BYTES else None


class FleetPublishingFetcher:
    """Producer side: fetch with the type's own fetcher; announce what the Manager accepts.

    ``NOT_MODIFIED`` passes through (nothing is published);
    ``commit`` publishes; ``discard`` has nothing to undo. Every hook of
    ``FetcherHooks`` is forwarded to the inner fetcher.
    """

    def __init__(
        self,
        inner: Fetcher,
        announcer: Announcer,
        name: str,
        type_name: str,
        params_hash: str,
        codec: SnapshotCodec,
    ) -> None:
        self._inner = inner
        self._announcer = announcer
        self.name = name
        self.type_name = type_name
        self.params_hash = params_hash
        self.codec = codec
        self.announced: Announcement | None = None
        """What this fetcher last announced."""
        self._served: Any = None

    def __call__(self) -> Any:
        return self._inner()

    def commit(self, value: Any) -> None:
        """Announce ``value`` (it passed every check); raises with nothing announced.

        The inner fetcher's own ``commit`` runs first (what it raises refuses the swap)."""
        forward = hook_of(self._inner, "commit")
        if forward is not None:
            forward(value)
        try:
            self.announced = self._announcer.publish(
                self.name,
                self.type_name,
                self.params_hash,
                self.codec,
                value,
                fresh=self._served is None,
            )
        except BaseException:
            if self._served is not None:  # the next refresh reads the change again
                self._resume(self._served)
            raise
        self._served = value

    def discard(self, value: Any) -> None:
        """A refused value: nothing was published for it (the inner fetcher's ``discard``)."""
        forward = hook_of(self._inner, "discard")
        if forward is not None:
            forward(value)

    def carry_over(self, value: Any) -> None:
        """``value`` serves without this fetcher having fetched it (a config reload carried
        it over, a rollback kept it): the inner fetcher resumes from it."""
        self._served = value
        self._resume(value)

    def _resume(self, value: Any) -> None:
        call_hook(self._inner, "carry_over", value, label=self._label())

    def close(self) -> None:
        """Close the inner fetcher (its database connection)."""
        call_hook(self._inner, "close", label=self._label())

    def cancel(self) -> None:
        """Stop a load in flight (forwarded to the inner fetcher)."""
        call_hook(self._inner, "cancel", label=self._label())

    def _label(self) -> str:
        return f"fleet fetcher of {self.type_name}/{self.name}"


class _AnnouncingFactory:
    """A shared type's factory (``NamedFetcherFactory``): each fetcher it makes announces
    under its resource's name. ``__call__`` (params alone) is refused: an announcement
    is keyed by the name."""

    def __init__(
        self, factory: FetcherFactory, type_name: str, codec: SnapshotCodec, announcer: Announcer
    ) -> None:
        self._factory = factory
        self._type = type_name
        self._codec = codec
        self._announcer = announcer

    def __call__(self, params: dict[str, Any]) -> Fetcher:
        raise TypeError(f"a fleet {self._type!r} fetcher is made for a named resource")

    def for_resource(
        self, name: str, params: dict[str, Any], declared: dict[str, Any] | None = None
    ) -> Fetcher:
        """The type's own fetcher, announcing as ``name`` with the hash of the ``declared``
        params (a relative path as the config says it: pods resolve it elsewhere)."""
        return FleetPublishingFetcher(
            self._factory(params),
            self._announcer,
            name,
            self._type,
            entry_key(name, self._type, params if declared is None else declared),
            self._codec,
        )


def fleet_publishing_registry(base: Registry, announcer: Announcer) -> Registry:
    """The types of ``base`` with a fleet codec, each fetcher publishing through ``announcer``
    (a type without one is left out: the producer never loads it)."""
    registry = Registry()
    for schema in base.all():  # bounded: the registered types
        factory, codec = base.factory(schema.name), fleet_codec(schema)
        if factory is not None and codec is not None:
            registry.register(schema, _AnnouncingFactory(factory, schema.name, codec, announcer))
    return registry


def fleet_codec(schema: ResourceSchema) -> SnapshotCodec | None:
    """The codec a type crosses hosts with: its own, unless it has none or it pickles
    (``check_portable``: nothing downloaded is unpickled); None: not published."""
    codec = schema.codec
    if codec is None:
        return None
    try:
        check_portable(codec, schema.name)
    except FleetError:
        return None
    return codec
