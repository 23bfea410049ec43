"""The built-in operator and resource types, found the way plugins are.

The core knows no concrete type. :mod:`pineapple.engine` and
:mod:`pineapple.resource` each keep a default registry bound to an
entry-point group (``pineapple.operators``, ``pineapple.resources``); on its
first lookup of a name it does not know, a registry imports every module of
its group. Our own built-ins are named there too (``pyproject.toml``): the
operators (``pineapple.operators``, which needs nothing above the engine) and
the resource types with their operator (``resources``: pymysql, redis,
sqlite). So a bare ``Engine(config)`` or ``Manager()`` finds them, and so do
third-party packages; ``--plugin`` modules register on import.

The server, the CLI, codegen and ``compile_flow`` take their registries from
here and hand them on explicitly (``Engine(config, registry=...)``,
``Manager(registry)``); an isolated ``OperatorRegistry()`` or ``Registry()``
(tests) sees only what is registered into it.

>>> from pineapple import builtins
>>> from pineapple.engine import Engine
>>> engine = Engine(config, registry=builtins.operator_registry())  # doctest: +SKIP
"""

from __future__ import annotations

from .engine import OperatorRegistry, default_operator_registry
from .resource import Registry
from .resource.lowlevel import default_registry

__all__ = ["load", "operator_registry", "resource_registry"]


def load() -> None:
    """Import every module of both entry-point groups, built-ins included (idempotent)."""
    default_operator_registry().all()
    default_registry().all()


def operator_registry() -> OperatorRegistry:
    """The default operator registry, with the built-in operators registered."""
    load()
    return default_operator_registry()


def resource_registry() -> Registry:
    """The default resource-type registry, with the built-in types registered."""
    load()
    return default_registry()
