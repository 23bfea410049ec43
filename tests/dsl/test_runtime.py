"""A compiled flow is what the runtime loads: Manager now, Engine once it exists."""

from __future__ import annotations

from dsl import Flow, compile_flow
from dsl.generated.resources import StaticResource
from pineapple import Context
from pineapple.engine import Engine
from pineapple.resource import Manager, with_resources
from pineapple.resource.lowlevel import validate_resource_deps

from ._schemas import operator_registry

ITEMS = [{"id": "a", "score": 1.0}, {"id": "b", "score": 3.0}, {"id": "c", "score": 2.0}]


def demo_flow() -> Flow:
    flow = Flow("served", common_input=["user_id"], item_output=["id", "score"])
    flow.resource("hot", StaticResource(value=ITEMS))
    flow.add_operator("recall_resource", {"resource_name": "hot"}, item_output=["id", "score"])
    flow.add_operator("reorder_sort", {"order": "desc"}, item_input=["score"])
    flow.add_operator("filter_truncate", {"top_n": 2})
    return flow


def test_compiled_resources_load_in_the_manager() -> None:
    # The resource side is real (static type on main); operators are checked
    # against the test registry until the built-in operators land.
    config = compile_flow(demo_flow(), operators=operator_registry())
    manager = Manager()
    assert manager.load_from_root_config(config) == ["hot"]
    manager.start()
    try:
        validate_resource_deps(config, manager)
        handle = manager.get("hot")
        assert handle is not None
        with handle as value:
            assert value == ITEMS
    finally:
        manager.stop()


def test_compiled_flow_loads_in_engine_and_manager_and_serves() -> None:
    config = compile_flow(demo_flow())  # the real registries
    manager = Manager()
    manager.load_from_root_config(config)
    manager.start()
    engine = Engine(config)
    try:
        validate_resource_deps(config, manager)
        ctx = with_resources(Context(), manager)
        response = engine.execute(ctx, {"common": {"user_id": "u1"}, "items": []})
        assert [item["id"] for item in response["items"]] == ["b", "c"]
    finally:
        engine.close()
        manager.stop()


def test_skip_sub_flow_and_template_run_in_the_engine() -> None:
    from dsl import SubFlow

    flow = Flow("guards", common_input=["_no_sort", "limit"], item_output=["id", "score"])
    flow.resource("hot", StaticResource(value=ITEMS))
    flow.add_operator("recall_resource", {"resource_name": "hot"}, item_output=["id", "score"])
    with flow.skip_when("_no_sort"):
        flow.add_operator("reorder_sort", {"order": "desc"}, item_input=["score"])
    flow.add_subflow(SubFlow("tail").add_operator("filter_truncate", {"top_n": "{{limit}}"}))
    config = compile_flow(flow)
    manager = Manager()
    manager.load_from_root_config(config)
    manager.start()
    engine = Engine(config)
    try:
        ctx = with_resources(Context(), manager)
        sorted_top = engine.execute(ctx, {"common": {"_no_sort": False, "limit": 2}, "items": []})
        unsorted = engine.execute(ctx, {"common": {"_no_sort": True, "limit": 1}, "items": []})
    finally:
        engine.close()
        manager.stop()
    assert [item["id"] for item in sorted_top["items"]] == ["b", "c"]
    assert [item["id"] for item in unsorted["items"]] == ["a"]
