"""``errors/`` fixtures: construction, dependency check or execution fails as the engines do."""

from __future__ import annotations

from typing import Any

import pytest

import pineapple
from pineapple import PineappleError, resource
from pineapple.engine import Engine

from ._fixtures import load, marks_for, missing_dir_param
from ._resources import fixture_context


def _files() -> list[Any]:
    params = [
        pytest.param(data, id=fixture_id, marks=marks_for(fixture_id, data))
        for fixture_id, data in load("errors")
    ]
    return params or [missing_dir_param()]


def _fail(data: dict[str, Any]) -> PineappleError:
    config = data["config"]
    try:
        engine = Engine(config)
    except PineappleError as exc:
        return exc
    try:
        with fixture_context(data, config) as (ctx, provider):
            if isinstance(provider, resource.Manager):
                resource.lowlevel.validate_resource_deps(config, provider)
            engine.execute(ctx, data.get("request") or {"common": {}, "items": []})
    except PineappleError as exc:
        return exc
    finally:
        engine.close()
    pytest.fail("no error was raised")


@pytest.mark.parametrize("data", _files())
def test_error_fixture(data: dict[str, Any]) -> None:
    expected = data["expected_error"]
    err = _fail(data)
    assert isinstance(err, getattr(pineapple, expected["type"])), f"{type(err).__name__}: {err}"
    assert expected["message_contains"] in str(err)
    if "wrapping_exact" in expected:
        assert expected["wrapping_exact"] in str(err)
