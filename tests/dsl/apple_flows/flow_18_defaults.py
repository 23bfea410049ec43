from apple import Flow

flow = Flow(
    name="defaults",
    common_input=["boost"],
    item_input=["item_id", "score"],
    item_output=["item_id", "final"],
)
flow.transform_by_lua(
    common_input=["boost"],
    item_input=["score"],
    item_output=["final"],
    common_defaults={"boost": 1},
    item_defaults={"score": 0},
    lua_script="function f() return score * boost end",
    function_for_item="f",
    function_for_common="",
)

REQUEST = {
    "common": {"boost": 2},
    "items": [{"item_id": "a", "score": 4}, {"item_id": "b", "score": 1}],
}
