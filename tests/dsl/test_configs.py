"""The flow sources in configs/ compile to the JSON checked in beside them.

These tests need the real resource and operator types. Until the types a
flow uses are registered (the resources and engine work land on main), they
skip and name what is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsl import compile_flow, load_flow
from pineapple import Context, builtins
from pineapple.engine import Engine, default_operator_registry
from pineapple.resource import Manager, with_resources
from pineapple.resource.lowlevel import default_registry, validate_resource_deps

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

FLOWS = {
    "demo": (
        {"json_file"},
        {
            "recall_resource",
            "transform_resource_lookup",
            "filter_condition",
            "reorder_sort",
            "filter_truncate",
        },
    ),
    "production": (
        {"feed_data", "redis_connection"},
        {"recall_feed_data", "transform_redis_get", "reorder_sort", "filter_truncate"},
    ),
}


def require_types(flow: str) -> None:
    builtins.load()  # the one place that registers the built-in types
    resource_types, operator_types = FLOWS[flow]
    missing = sorted(t for t in resource_types if default_registry().get(t) is None)
    missing += sorted(t for t in operator_types if default_operator_registry().get(t) is None)
    assert not missing, f"configs/{flow}_flow.py needs types that are not registered: {missing}"


def without_time(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "_PINEAPPLE_CREATE_TIME"}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_checked_in_json_equals_the_compiled_flow(flow: str) -> None:
    require_types(flow)
    compiled = compile_flow(load_flow(CONFIGS / f"{flow}_flow.py"))
    checked_in = json.loads((CONFIGS / f"{flow}.json").read_text())
    assert without_time(checked_in) == without_time(compiled), (
        f"configs/{flow}.json is stale: "
        f"run `pineapple compile configs/{flow}_flow.py -o configs/{flow}.json`"
    )
    assert isinstance(checked_in["_PINEAPPLE_CREATE_TIME"], str)


def test_demo_config_serves_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    require_types("demo")
    monkeypatch.chdir(CONFIGS.parent.parent)  # data paths are relative to configs/, not here
    config = json.loads((CONFIGS / "demo.json").read_text())
    manager = Manager()
    manager.load_from_root_config(config, base_dir=CONFIGS)
    manager.start()
    engine = Engine(config)
    try:
        validate_resource_deps(config, manager)
        response = engine.execute(
            with_resources(Context(), manager), {"common": {"user_id": "u1"}, "items": []}
        )
    finally:
        engine.close()
        manager.stop()
    ids = [item["item_id"] for item in response["items"]]
    assert ids == ["item_05", "item_02", "item_10", "item_07", "item_04"]
    assert set(response["items"][0]) == {"item_id", "category", "ctr"}
