"""``pipelines/`` fixtures: a whole config, requests, expected responses (or errors)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from pineapple import PineappleError
from pineapple.engine import Engine

from ._fixtures import load, marks_for, missing_dir_param, normalized
from ._resources import fixture_context, redis_addr, with_placeholder


def _files() -> list[Any]:
    params = [
        pytest.param(data, id=fixture_id, marks=marks_for(fixture_id, data))
        for fixture_id, data in load("pipelines")
    ]
    return params or [missing_dir_param()]


def _sorted_items(items: list[Any]) -> list[Any]:
    return sorted(items, key=repr)


def _redis_client(request: pytest.FixtureRequest) -> redis.Redis:
    addr: str = request.getfixturevalue("redis_addr")  # skips (or fails) when unreachable
    host, _, port = addr.rpartition(":")
    return redis.Redis(host=host, port=int(port), decode_responses=True)


@pytest.mark.parametrize("data", _files())
def test_pipeline_fixture(data: dict[str, Any], request: pytest.FixtureRequest) -> None:
    requires = data.get("requires") or []
    config = data["config"]
    client = None
    if "redis" in requires:
        client = _redis_client(request)
        config = with_placeholder(config, redis_addr())
    engine = Engine(config)
    try:
        with fixture_context(data, config) as (ctx, _provider):
            for case in data["cases"]:
                for command in case.get("prepopulate") or ():
                    assert client is not None
                    client.execute_command(*command)  # type: ignore[no-untyped-call]
                _run_case(engine, ctx, data, case)
                if case.get("expected_redis_key") and client is not None:
                    assert client.exists(case["expected_redis_key"]), case["name"]
    finally:
        engine.close()
        if client is not None:
            client.close()


def _run_case(engine: Engine, ctx: Any, data: dict[str, Any], case: dict[str, Any]) -> None:
    name = case["name"]
    if "expect_error" in case:
        with pytest.raises(PineappleError) as info:
            engine.execute(ctx, case["request"])
        assert case["expect_error"] in str(info.value), name
        return
    got = engine.execute(ctx, case["request"])
    if "expected" not in case:  # only "runs without an error" is pinned
        return
    want = case["expected"]
    assert normalized(got["common"]) == normalized(want.get("common", {})), name
    got_items, want_items = normalized(got["items"]), normalized(want.get("items", []))
    if data.get("strict_order") is False:
        got_items, want_items = _sorted_items(got_items), _sorted_items(want_items)
    assert got_items == want_items, name
