"""The ``resources`` face: exports exactly ``__all__``, and importing registers every type."""

from __future__ import annotations

import importlib

import resources
from pineapple.resource.lowlevel import default_registry

BUILT_IN = ["csv_file", "feed_data", "json_file", "redis_connection", "static"]


def test_all_lists_exactly_the_public_names() -> None:
    exported = resources.__all__
    assert len(exported) == len(set(exported))
    for name in exported:
        assert hasattr(resources, name), name
    public = {
        n
        for n, v in vars(resources).items()
        if not n.startswith("_") and not isinstance(v, type(importlib))
    }
    assert public == set(exported)


def test_importing_registers_every_built_in_type_with_a_printer() -> None:
    registry = default_registry()
    for name in BUILT_IN:
        schema = registry.get(name)
        assert schema is not None, name
        assert schema.printer is not None, name
        assert schema.description, name
        for pname, spec in schema.params.items():
            assert spec.description, f"{name}.{pname}"
