"""The built-in operator and resource types, loaded in one place.

The core knows no concrete type. :mod:`pineapple.engine` and
:mod:`pineapple.resource` each keep a default registry that starts empty
and is filled by whatever registers into it at import time: the built-in
operators (``import pineapple.operators``, which needs nothing above the
engine), the built-in resource types and their operators (``import
resources``: pymysql, redis, sqlite), ``--plugin`` modules, and the
third-party packages named in the entry-point groups ``pineapple.operators``
and ``pineapple.resources`` (loaded on the first lookup of an unknown name).

This module is the one place that imports the built-ins. The server, the
CLI, codegen and ``compile_flow`` take their registries from here and hand
them on explicitly (``Engine(config, registry=...)``, ``Manager(registry)``);
a bare ``Engine(config)`` or ``Manager()`` uses the default registries as
they are, so a library user who wants the built-in operators imports
``pineapple.operators`` (or calls :func:`operator_registry`) first.

>>> from pineapple import builtins
>>> from pineapple.engine import Engine
>>> engine = Engine(config, registry=builtins.operator_registry())  # doctest: +SKIP
"""

from __future__ import annotations

import importlib

from .engine import OperatorRegistry, default_operator_registry
from .resource import Registry, default_registry

__all__ = ["MODULES", "load", "operator_registry", "resource_registry"]

MODULES: tuple[str, ...] = ("pineapple.operators", "resources")
"""The packages whose import registers the built-in operator and resource types."""


def load() -> None:
    """Import the built-in operators and resource types (idempotent: imports run once)."""
    for name in MODULES:
        importlib.import_module(name)


def operator_registry() -> OperatorRegistry:
    """The default operator registry, with the built-in operators registered."""
    load()
    return default_operator_registry()


def resource_registry() -> Registry:
    """The default resource-type registry, with the built-in types registered."""
    load()
    return default_registry()
