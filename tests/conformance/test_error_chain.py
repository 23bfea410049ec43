"""``error_chain/``: an operator's own exception stays reachable as ``__cause__``."""

from __future__ import annotations

from typing import Any

import pytest

from pineapple import Context, ExecutionError
from pineapple.engine import (
    Engine,
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorRegistry,
    OperatorSchema,
)

from ._fixtures import load, missing_dir_param


class FakeRedisError(Exception):
    """Stands in for a client library's error."""


def _files() -> list[Any]:
    params = [pytest.param(data, id=fixture_id) for fixture_id, data in load("error_chain")]
    return params or [missing_dir_param()]


def _probe(scenario: dict[str, Any]) -> str:
    message = scenario["inner_exception_msg"]

    class Failing(Operator):
        def __init__(self, params: dict[str, Any]) -> None:
            pass

        def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            raise FakeRedisError(message)

    registry = OperatorRegistry()
    registry.register(OperatorSchema("fake_redis_get", "transform", "fails"), Failing)
    name = scenario["outer_operator_name"]
    engine = Engine(
        {
            "pipeline_config": {"operators": {name: {"type_name": "fake_redis_get"}}},
            "pipeline_group": {"main": {"pipeline": [name]}},
        },
        registry=registry,
    )
    try:
        engine.execute(Context(), {"common": {}, "items": []})
    except ExecutionError as exc:
        cause = exc.__cause__
        if isinstance(cause, FakeRedisError) and exc.operator == name:
            return f"PASS:{cause}"
        return f"FAIL:cause is {cause!r}"
    return "FAIL:no error"


@pytest.mark.parametrize("data", _files())
def test_error_chain_fixture(data: dict[str, Any]) -> None:
    assert _probe(data["scenario"]) == data["expected_probe_output"]
