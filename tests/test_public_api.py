"""Each public face lists exactly what it exports, and every listed name exists."""

from __future__ import annotations

import importlib

import pytest

FACES = [
    "pineapple",
    "pineapple.resource",
    "pineapple.engine",
    "pineapple.operators.bench",
    "resources",
    "server",
    "dsl",
    "codegen",
]


@pytest.mark.parametrize("name", FACES)
def test_all_lists_existing_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n)) or exported == sorted(
        exported
    )
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ lists missing {attr}"
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, type(importlib))
    }
    assert public - set(exported) <= {"annotations"}, f"{name} exports unlisted names"
