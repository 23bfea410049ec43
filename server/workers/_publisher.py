"""The publisher Manager: a config's shared entries, fetched once and published.

Two authorities load the data resources that others map: a pod's supervisor
(``--workers N``, it publishes into its ``SharedStore`` for its workers) and
the fleet's producer (``pineapple publish``, it publishes into the fleet store
for every pod). Both build the same thing, written once here: a registry whose
every type declares a codec and whose fetchers are wrapped so that a value
reaches the store only once the Manager accepted it (:func:`shared_registry`),
and a plain Manager of exactly the config entries of those types, with the
single-process semantics (validators, memory budget, ``NOT_MODIFIED``,
carry-over across reloads) (:func:`start_publisher`). A type without a codec
is not registered, so its entries are never fetched here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeAlias

from pineapple import resource
from pineapple.resource import Fetcher, FetcherFactory, Registry, ResourceSchema
from pineapple.resource.lowlevel import LoadedConfig, ManagerMetrics, MemoryBudget, SnapshotCodec

__all__ = ["CodecOf", "FetcherWrap", "shared_registry", "start_publisher"]

FetcherWrap: TypeAlias = Callable[[Fetcher, str, dict[str, Any], SnapshotCodec], Fetcher]
"""``wrap(inner, type_name, params, codec)``: the publishing fetcher around a type's own."""
CodecOf: TypeAlias = Callable[[ResourceSchema], SnapshotCodec | None]
"""The codec a store uses for a type (None: the type is not shared through it)."""


def _schema_codec(schema: ResourceSchema) -> SnapshotCodec | None:
    return schema.codec


def shared_registry(
    base: Registry, wrap: FetcherWrap, codec_of: CodecOf = _schema_codec
) -> Registry:
    """The types of ``base`` that have a codec (``codec_of``, default the schema's own),
    each fetcher made by the type's factory and wrapped by ``wrap``.

    A type without a codec (or without a factory) is left out: whoever loads
    through this registry never fetches it.
    """
    registry = Registry()
    for schema in base.all():  # bounded: the registered types
        factory, codec = base.factory(schema.name), codec_of(schema)
        if factory is None or codec is None:
            continue

        def make(
            params: dict[str, Any],
            factory: FetcherFactory = factory,
            codec: SnapshotCodec = codec,
            type_name: str = schema.name,
        ) -> Fetcher:
            return wrap(factory(params), type_name, params, codec)

        registry.register(schema, make)
    return registry


def start_publisher(
    registry: Registry,
    loaded: LoadedConfig,
    *,
    metrics: ManagerMetrics | None,
    start_timeout: float,
    budget: MemoryBudget,
    carry_over: resource.Manager | None = None,
    allow_partial: bool = False,
    before_start: Callable[[resource.Manager], None] | None = None,
) -> resource.Manager:
    """A started Manager of the entries of ``loaded`` whose type ``registry`` holds.

    ``carry_over``: the serving publisher; an unchanged entry keeps its value
    (and its fetcher resumes change detection from it), a changed one is
    fetched anew. Raises what the start raises (``StartError`` names each
    failed resource) with the new Manager stopped; with ``allow_partial`` a
    failed first fetch is retried in the background instead. ``before_start``
    is called with the Manager once every entry is registered (every fetcher
    made), before any fetch (a caller that may have to stop it meanwhile keeps it).
    """
    shared = tuple(e for e in loaded.entries if registry.get(e.type) is not None)
    manager = resource.Manager(registry, metrics, start_timeout=start_timeout, budget=budget)
    try:
        manager.load_from_root_config(
            dataclasses.replace(loaded, entries=shared), carry_over=carry_over
        )
        if before_start is not None:
            before_start(manager)
        manager.start(allow_partial=allow_partial)
    except Exception:
        manager.stop()
        raise
    return manager
