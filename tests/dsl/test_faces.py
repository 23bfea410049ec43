"""The public faces of dsl and codegen list exactly what they export."""

from __future__ import annotations

import importlib
import types

import pytest


@pytest.mark.parametrize("name", ["dsl", "codegen", "dsl.generated.resources"])
def test_all_lists_existing_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported))
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ lists missing {attr}"
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public - set(exported) <= {
        "annotations",
        "ParamSpec",
        "BaseResource",
        "timedelta",
        "Any",
    }


def test_dsl_error_is_a_pineapple_validation_error() -> None:
    import dsl
    import pineapple

    assert issubclass(dsl.ValidationError, pineapple.ValidationError)
    assert issubclass(dsl.FlowLoadError, dsl.ValidationError)
