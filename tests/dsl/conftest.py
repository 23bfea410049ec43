from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

from dsl import Flow, compile_flow

from ._schemas import operator_registry, resource_registry

FIXED_TIME = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


@pytest.fixture
def compile_isolated() -> Callable[[Flow], dict[str, Any]]:
    """``compile_flow`` against the test registries, at a fixed create time."""
    ops, res = operator_registry(), resource_registry()

    def run(flow: Flow) -> dict[str, Any]:
        return compile_flow(flow, operators=ops, resources=res, created_at=FIXED_TIME)

    return run
