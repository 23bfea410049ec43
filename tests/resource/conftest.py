from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pineapple.resource import _refvalue


@dataclass(frozen=True)
class Impl:
    RefValue: Any
    ResourceHandle: Any


_IMPLS = {"python": Impl(_refvalue.PyRefValue, _refvalue.PyResourceHandle)}
if _refvalue.IMPLEMENTATION == "c":
    _IMPLS["c"] = Impl(_refvalue.RefValue, _refvalue.ResourceHandle)


@pytest.fixture(params=sorted(_IMPLS))
def impl(request: pytest.FixtureRequest) -> Impl:
    """Each borrow-path implementation (pure Python, and compiled when built)."""
    return _IMPLS[request.param]
