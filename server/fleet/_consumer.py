"""A pod's side of the fleet: the fetchers that answer what the fleet announced, never a source.

``pineapple serve --fleet URL --fleet-cache DIR``: for every resource whose type
declares a portable codec (a data format: ``check_portable``), the pod's fetcher
is a :class:`FleetFetcher`. It reads the pin (``PINS[name]``) and the
announcement (``ANNOUNCEMENTS[name]``) of its resource, answers ``NOT_MODIFIED``
when it serves that generation already, and otherwise downloads it into the
pod's cache (digest verified: :class:`~server.fleet.SnapshotCache`) and opens
it with the type's codec. The producer validated and sized every generation
it announced, so the pod's Manager serves it as it comes
(``admitted_upstream``), exactly as a worker serves what its supervisor
published (``server/workers/worker/_mapping.py``'s ``MappedFetcher``). A type without a
portable codec is built by the pod from its source, as without a fleet.

When the store cannot be reached, a fetcher that serves keeps its value (the
fetch fails, named); one that serves nothing yet (the pod starts) opens the
generation its pod last accepted from the cache. Either way its resource
shows ``Fresh=False`` with reason ``FleetStoreUnavailable`` naming the store
(:class:`~pineapple.resource.lowlevel.SourceReport`), until the store answers
again. An announcement whose ``params_hash`` differs from the pod's config of
that resource is refused (:class:`ParamsMismatchError`): the pod keeps what it
has.

The fleet's config is read the same way (``_fleet_config.py``); the
connection to the store is a :class:`~server.fleet._link.StoreLink`.

Guarantees:
- Nothing downloaded is unpickled: a type whose codec pickles is never read
  from the fleet (``check_portable``).
- ``FleetConsumer._served`` and ``_stale`` change under ``_lock`` only; a
  fetcher writes its resource's entries (its Manager serialises its fetch,
  commit and discard), readers (the heartbeat, statuses) take copies.
- A generation counts as served from the moment its Manager commits it (the
  ``commit`` hook, under the Manager's swap lock), not when it was fetched:
  a value dropped by a local pin is ``discard``-ed and never reported.
- Every store operation has the store's deadline (``--fleet-timeout``); a
  download has ``--fleet-download-timeout`` and ``--fleet-max-snapshot-bytes``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from pineapple.resource import NOT_MODIFIED, Fetcher, FetcherFactory, Registry
from pineapple.resource.lowlevel import (
    NamedFetcherFactory,
    SnapshotCodec,
    SnapshotFormatError,
    SourceReport,
)

from ..workers._store_format import entry_key
from ._cache import SnapshotCache
from ._errors import FleetError, StoreUnavailableError
from ._link import StoreLink
from ._publishing import fleet_codec
from ._snapshots import Announcement
from ._store import ANNOUNCEMENTS, PINS, FleetLimits, Record

__all__ = [
    "FLEET_SOURCE",
    "STALE_REASON",
    "FleetConsumer",
    "FleetFetcher",
    "NotAnnouncedError",
    "ParamsMismatchError",
    "fleet_registry",
]

FLEET_SOURCE = "fleet"
"""``source`` of a resource read from the fleet (``GET /resources/{name}``)."""
STALE_REASON = "FleetStoreUnavailable"
"""The ``Fresh=False`` reason of a resource whose pod cannot reach the fleet store."""
_PIN_MAX_BYTES = 64 * 1024

_log = logging.getLogger("pineapple.fleet")


class ParamsMismatchError(FleetError):
    """An announcement was made for other params than this pod's config gives its resource."""


class NotAnnouncedError(FleetError):
    """The fleet has announced no generation of a resource (and the pod has none cached)."""


class FleetConsumer:
    """What a pod knows of the fleet: the store, its cache, what it serves, what is stale."""

    def __init__(self, link: StoreLink, cache: SnapshotCache, limits: FleetLimits) -> None:
        self.link = link
        self.cache = cache
        self.limits = limits
        self._lock = threading.Lock()
        self._served: dict[str, Announcement] = {}
        """``name -> announcement`` of the generation the pod serves."""
        self._pins: dict[str, dict[str, Any]] = {}
        """``name -> pin`` the served generation was chosen by."""
        self._stale: dict[str, tuple[str, float]] = {}
        """``name -> (message, since)``: served, but the store could not confirm it."""
        self.on_change: Callable[[], None] = lambda: None
        """Called (outside the lock) when what the pod serves changed (the heartbeat)."""

    # -- what the fleet says ------------------------------------------------------------

    def wanted(
        self, name: str, *, quick: bool = False
    ) -> tuple[Announcement, dict[str, Any] | None]:
        """The generation of ``name`` the fleet serves: the pinned one, else the announced
        one; with the pin. Raises :class:`StoreUnavailableError`, :class:`NotAnnouncedError`,
        ``AnnouncementError``."""
        pin = _pin_of(self.link.run(lambda store: store.get(PINS, name), quick=quick))
        record = self.link.run(lambda store: store.get(ANNOUNCEMENTS, name), quick=quick)
        if record is None:
            raise NotAnnouncedError(f"resource {name!r}: nothing announced in {self.link.url}")
        announcement = Announcement.from_json(record.value)
        if pin is not None and pin["generation"] != announcement.generation:
            generation = pin["generation"]
            history = self.link.run(lambda store: store.history(ANNOUNCEMENTS, name))
            announcement = _generation_in(history, name, generation, self.link.url)
        return announcement, pin

    def download(self, announcement: Announcement, codec: SnapshotCodec) -> Any:
        """The value of ``announcement``: from the cache, else downloaded and verified."""
        max_bytes = self.limits.max_snapshot_bytes
        return self.link.run(
            lambda store: self.cache.fetch(store, announcement, codec, max_bytes=max_bytes)
        )

    # -- what this pod serves -----------------------------------------------------------

    def served(self) -> dict[str, int]:
        """``name -> generation`` the pod serves of every resource it reads from the fleet."""
        with self._lock:
            return {name: a.generation for name, a in self._served.items()}

    def served_of(self, name: str) -> Announcement | None:
        """The announcement of the generation of ``name`` the pod serves (None: none)."""
        with self._lock:
            return self._served.get(name)

    def commit(self, announcement: Announcement, pin: dict[str, Any] | None) -> None:
        """``announcement``'s generation now serves."""
        with self._lock:
            before = self._served.get(announcement.name)
            self._served[announcement.name] = announcement
            if pin is None:
                self._pins.pop(announcement.name, None)
            else:
                self._pins[announcement.name] = pin
        if before is None or before.generation != announcement.generation:
            _log.info(
                "resource %s: serving fleet generation %d%s",
                announcement.name,
                announcement.generation,
                f" (pinned: {pin.get('reason') or 'no reason given'})" if pin else "",
            )
            self.on_change()

    def confirm(self, name: str) -> None:
        """The store answered for ``name``: what it serves is no longer stale."""
        with self._lock:
            was = self._stale.pop(name, None)
        if was is not None:
            _log.info("resource %s: the fleet store %s answers again", name, self.link.url)

    def mark_stale(self, name: str, exc: BaseException | str) -> None:
        """The store could not be asked about ``name``: what it serves may be old."""
        message = f"the fleet store {self.link.url} is unavailable ({exc})"
        with self._lock:
            since = self._stale.get(name, (message, time.time()))[1]
            self._stale[name] = (message, since)

    def store_down(self, why: str) -> None:
        """The store stopped answering: everything the pod serves from the fleet may be old."""
        for name in self.served():  # bounded: the fleet resources
            self.mark_stale(name, why)

    def stale(self) -> dict[str, str]:
        """``name -> why`` of every served resource the store could not confirm."""
        with self._lock:
            return {name: message for name, (message, _) in self._stale.items()}

    def report(self, name: str) -> SourceReport:
        """What ``GET /resources/{name}`` shows of its fleet source."""
        with self._lock:
            served = self._served.get(name)
            stale = self._stale.get(name)
            pin = self._pins.get(name)
        detail: dict[str, Any] = {
            "store": self.link.url,
            "generation": None if served is None else served.generation,
            "announcement": None if served is None else _announcement_dict(served),
            "pin": None if pin is None else dict(pin),
        }
        if stale is None:
            return SourceReport(FLEET_SOURCE, detail)
        message, since = stale
        served_text = "nothing" if served is None else f"generation {served.generation}"
        return SourceReport(
            FLEET_SOURCE,
            detail,
            stale=(STALE_REASON, f"{message}; serving {served_text} from the pod's cache"),
            stale_since=since,
        )


def _announcement_dict(announcement: Announcement) -> dict[str, Any]:
    return dict(orjson.loads(announcement.to_json()))


def _pin_of(record: Any) -> dict[str, Any] | None:
    """The pin in a ``PINS`` record (None: none); ``FleetError`` naming a malformed one."""
    if record is None:
        return None
    value = record.value
    try:
        if len(value) > _PIN_MAX_BYTES:
            raise ValueError(f"over {_PIN_MAX_BYTES} bytes")
        pin = orjson.loads(value)
        generation = pin["generation"]
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
            raise ValueError("'generation' is not a positive integer")
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise FleetError(f"the pin of resource {record.key!r} is malformed: {exc}") from None
    return {k: pin.get(k) for k in ("generation", "reason", "by", "time")}


def _generation_in(history: list[Record], name: str, generation: int, url: str) -> Announcement:
    """The announcement of an older ``generation`` of ``name`` in its ``history``."""
    for record in reversed(history):  # bounded: the kept history
        if record.deleted:
            continue
        announcement = Announcement.from_json(record.value)
        if announcement.generation == generation:
            return announcement
    raise NotAnnouncedError(
        f"resource {name!r} is pinned to generation {generation}, which is not in the"
        f" announcements {url} still keeps"
    )


class FleetFetcher:
    """A pod's fetcher of one resource: the generation the fleet serves (see module docs).

    Guarantees: ``_pending`` and ``generation`` are written by ``__call__``,
    ``commit``, ``discard`` and ``carry_over``, which its Manager serialises
    (the refresh lock around a fetch and its admission); a fetch's value is
    committed or discarded before the next fetch, so ``commit`` and
    ``discard`` concern the pending generation whatever value they are given
    (a supervisor's ``PublishingFetcher`` passes its staged copy).
    """

    admitted_upstream = True

    def __init__(
        self,
        consumer: FleetConsumer,
        name: str,
        type_name: str,
        params_hash: str,
        codec: SnapshotCodec,
    ) -> None:
        self._consumer = consumer
        self.name = name
        self.type_name = type_name
        self.params_hash = params_hash
        self.codec = codec
        self.generation = 0
        """The generation this fetcher's Manager serves (0: none yet)."""
        self._pending: tuple[Any, Announcement, dict[str, Any] | None] | None = None

    def __call__(self) -> Any:
        consumer = self._consumer
        # At start with a cached generation to fall back on, the store is not waited for.
        quick = not self.generation and consumer.cache.latest(self.name) is not None
        try:
            announcement, pin = consumer.wanted(self.name, quick=quick)
        except (StoreUnavailableError, NotAnnouncedError) as exc:
            return self._from_cache(exc)
        except FleetError:  # the store answered (a malformed announcement or pin)
            consumer.confirm(self.name)
            raise
        consumer.confirm(self.name)
        if announcement.params_hash != self.params_hash:
            raise ParamsMismatchError(
                f"resource {self.name!r}: generation {announcement.generation} in"
                f" {consumer.link.url} was published for other params ({announcement.params_hash})"
                f" than this pod's config gives it ({self.params_hash}); keeping"
                f" {self._keeping()}"
            )
        if announcement.type != self.type_name:
            raise ParamsMismatchError(
                f"resource {self.name!r}: generation {announcement.generation} is of type"
                f" {announcement.type!r}, this pod's config says {self.type_name!r}"
            )
        if announcement.generation == self.generation:
            consumer.commit(announcement, pin)  # a pin on the served generation shows
            return NOT_MODIFIED
        try:
            value = consumer.download(announcement, self.codec)
        except StoreUnavailableError as exc:
            return self._from_cache(exc)
        self._pending = (value, announcement, pin)
        return value

    def _keeping(self) -> str:
        return f"generation {self.generation}" if self.generation else "nothing (none served)"

    def _from_cache(self, exc: FleetError) -> Any:
        """The store cannot say: keep what serves (the fetch fails), or at start the cache."""
        consumer = self._consumer
        if isinstance(exc, StoreUnavailableError):
            consumer.mark_stale(self.name, exc)
        else:
            consumer.confirm(self.name)  # the store answered: nothing announced
        if self.generation:
            raise exc
        cached = consumer.cache.latest(self.name)
        if cached is None or cached.params_hash != self.params_hash:
            what = "none" if cached is None else "one for other params"
            raise type(exc)(
                f"{exc}; the fleet cache {consumer.cache.root} holds {what} of {self.name!r}"
            ) from None
        try:
            value = consumer.cache.open(cached, self.codec)
        except (FleetError, SnapshotFormatError, OSError) as failure:
            raise type(exc)(f"{exc}; its cached generation cannot be opened: {failure}") from None
        _log.warning(
            "resource %s: %s; serving its cached generation %d", self.name, exc, cached.generation
        )
        self._pending = (value, cached, None)
        return value

    def commit(self, value: Any) -> None:
        """The generation this fetcher returned last serves now (called under the Manager's
        swap lock; under ``--workers`` ``value`` is the supervisor's staged copy of it)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self.generation = pending[1].generation
            self._consumer.commit(pending[1], pending[2])

    def discard(self, value: Any) -> None:
        """The generation this fetcher returned last will not serve (refused, pinned here
        meanwhile, the manager stopped)."""
        self._pending = None

    def carry_over(self, value: Any) -> None:
        """``value`` serves without this fetcher having fetched it: a config reload carried
        the pod's served generation over (a new fetcher takes its number), or a local
        rollback or refusal kept a value (the next fetch asks the fleet again)."""
        if self.generation:
            self.generation = 0
            return
        served = self._consumer.served_of(self.name)
        if served is not None and served.params_hash == self.params_hash:
            self.generation = served.generation

    def source_report(self) -> SourceReport:
        """``source: fleet``, the generation served and its announcement (and a stale one)."""
        return self._consumer.report(self.name)


def fleet_registry(base: Registry, consumer: FleetConsumer) -> Registry:
    """``base`` with every type the fleet moves (``fleet_codec``) read from the fleet.

    Such a type's factory is a :class:`_FleetFactory`: told the resource's
    name (``NamedFetcherFactory``), it checks the params as the type does (no
    I/O) and builds a :class:`FleetFetcher` that follows that name's
    announcements, with the params' hash the producer announces them with
    (``entry_key``). The supervisor's publishing registry wraps it and passes
    the name on (``KeyedFactory``).
    """
    registry = Registry()
    for schema in base.all():  # bounded: the registered types
        factory = base.factory(schema.name)
        if factory is None:
            continue
        codec = fleet_codec(schema)
        if codec is not None:
            factory = _FleetFactory(factory, consumer, schema.name, codec)
        registry.register(schema, factory)
    return registry


class _FleetFactory(NamedFetcherFactory):
    """A fleet-moved type's factory: a :class:`FleetFetcher` for a named resource."""

    def __init__(
        self,
        factory: FetcherFactory,
        consumer: FleetConsumer,
        type_name: str,
        codec: SnapshotCodec,
    ) -> None:
        self._factory = factory
        self._consumer = consumer
        self._type = type_name
        self._codec = codec

    def __call__(self, params: dict[str, Any]) -> Fetcher:
        raise TypeError(f"a fleet {self._type!r} fetcher is made for a named resource")

    def for_resource(
        self, name: str, params: dict[str, Any], declared: dict[str, Any] | None = None
    ) -> Fetcher:
        """The fleet's fetcher of resource ``name`` (after the type's own checks of ``params``),
        identified by its ``declared`` params, as the producer identifies what it announces."""
        self._factory(params)  # the type's own checks of its params (no I/O)
        key = entry_key(name, self._type, params if declared is None else declared)
        return FleetFetcher(self._consumer, name, self._type, key, self._codec)
