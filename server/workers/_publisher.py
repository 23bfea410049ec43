"""The publisher Manager: a config's shared entries, fetched once and published.

Two authorities load the data resources that others map: a pod's supervisor
(``--workers N``, it publishes into its ``SharedStore`` for its workers) and
the fleet's producer (``pineapple publish``, it publishes into the fleet store
for every pod). Each builds a registry of the types it shares, whose fetchers
publish a value only once the Manager accepted it (``publishing_registry``,
``fleet_publishing_registry``), and then the same thing, written once here: a
plain Manager of exactly the config entries of those types, with the
single-process semantics (validators, memory budget, ``NOT_MODIFIED``,
carry-over across reloads). A type the registry does not hold is never
fetched here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pineapple import resource
from pineapple.resource import Registry
from pineapple.resource.lowlevel import LoadedConfig, ManagerMetrics, MemoryBudget

__all__ = ["start_publisher"]


def start_publisher(
    registry: Registry,
    loaded: LoadedConfig,
    *,
    metrics: ManagerMetrics | None,
    start_timeout: float,
    budget: MemoryBudget,
    carry_over: resource.Manager | None = None,
    starting: Callable[[resource.Manager], AbstractContextManager[object]] | None = None,
    replay: Callable[[str, Any], None] | None = None,
    interval_is_max: bool = False,
) -> resource.Manager:
    """A started Manager of the entries of ``loaded`` whose type ``registry`` holds.

    ``carry_over``: the serving publisher; an unchanged entry keeps its value
    (and its fetcher resumes change detection from it), a changed one is
    fetched anew. ``starting(manager)``: a context around the first fetches
    (every entry registered by then), where the caller keeps the Manager so
    that it can stop it meanwhile (a shutdown), or refuses to start it. Raises
    what the start raises (``StartError`` names each failed resource) with the
    new Manager stopped. ``replay``: what a refreshed value of a ``replay`` entry answers
    before it is accepted (``Manager.set_replay``; the supervisor's value trial).
    ``interval_is_max``: refreshes are at most their interval apart (the jitter only
    shortens it: a fleet producer's).
    """
    shared = tuple(e for e in loaded.entries if registry.get(e.type) is not None)
    manager = resource.Manager(
        registry,
        metrics,
        start_timeout=start_timeout,
        budget=budget,
        interval_is_max=interval_is_max,
    )
    if replay is not None:
        manager.set_replay(replay)
    try:
        manager.load_from_root_config(
            dataclasses.replace(loaded, entries=shared), carry_over=carry_over
        )
        with starting(manager) if starting is not None else contextlib.nullcontext():
            manager.start()
    except Exception:
        manager.stop()
        raise
    return manager
