"""Benchmark-only operators and resource types: the public engines' stubs, in registries
of their own.

The realistic benchmark configs (``realistic_*`` in the shared fixtures) use
business operators that only exist as benchmark stubs (``recall_feed_data``
on a synthetic feed, ``filter_impression``, ``observe_datahub`` ...). This
package never touches the default registry: it builds a separate one that
holds every built-in operator plus the stubs (a stub replaces a built-in of
the same name there, as the Go ``pine_bench`` build has it)::

    from pineapple.engine import Engine
    from pineapple.operators.bench import bench_operator_registry

    engine = Engine(config, registry=bench_operator_registry())

``latency=False`` gives stubs that skip their simulated latency (engine work
only). The resource types of those configs (the synthetic ``feed_data``, a
``datahub_producer`` that drops every record) are in a resource registry of
the same shape::

    manager = resource.Manager(bench_resource_registry())
"""

from __future__ import annotations

from ...engine import OperatorRegistry as _OperatorRegistry
from ...engine import default_operator_registry as _default_operator_registry
from ...resource import Registry as _Registry
from ...resource.lowlevel import default_registry as _default_registry
from ._latency import LatencyProfile as LatencyProfile
from ._latency import LatencySampler as LatencySampler
from ._latency import parse_bench_profile as parse_bench_profile
from ._resources import FEED_ITEMS as FEED_ITEMS
from ._resources import RESOURCE_STUBS as _RESOURCE_STUBS
from ._stubs import STUBS as _STUBS

__all__ = [
    "FEED_ITEMS",
    "STUB_NAMES",
    "STUB_RESOURCE_NAMES",
    "LatencyProfile",
    "LatencySampler",
    "bench_operator_registry",
    "bench_resource_registry",
    "parse_bench_profile",
]

STUB_NAMES: tuple[str, ...] = tuple(sorted(schema.name for schema, _ in _STUBS))
"""The operator types this package provides."""

STUB_RESOURCE_NAMES: tuple[str, ...] = tuple(sorted(schema.name for schema, _ in _RESOURCE_STUBS))
"""The resource types this package provides."""


def bench_operator_registry(*, latency: bool = True) -> _OperatorRegistry:
    """A new registry: every operator of the default registry, then the stubs over them.

    ``latency``: whether stubs spend their ``bench_profile`` latency.
    """
    import pineapple.operators  # noqa: F401  (registers the built-ins)

    base = _default_operator_registry()
    reg = _OperatorRegistry()
    for schema in base.all():
        factory = base.factory(schema.name)
        if schema.name not in STUB_NAMES and factory is not None:
            reg.register(schema, factory)
    for schema, cls in _STUBS:
        stub = cls if latency else type(cls.__name__, (cls,), {"latency_enabled": False})
        reg.register(schema, stub)
    return reg


def bench_resource_registry() -> _Registry:
    """A new resource registry: every type of the default one, then the stubs over them."""
    base = _default_registry()
    reg = _Registry()
    for schema in base.all():  # all(): the entry-point group's types (built-ins) loaded first
        factory = base.factory(schema.name)
        if schema.name not in STUB_RESOURCE_NAMES and factory is not None:
            reg.register(schema, factory)
    for schema, factory in _RESOURCE_STUBS:
        reg.register(schema, factory)
    return reg
