from apple import Flow

flow = Flow(
    name="strict_fields",
    common_input=["uid"],
    item_input=["item_id", "score"],
    item_output=["item_id", "tagged"],
)
flow.transform_by_lua(
    common_input=["uid"],
    item_input=["score"],
    item_output=["tagged"],
    strict_common=["uid"],
    strict_item=["score"],
    lua_script="function t() return tostring(uid) .. ':' .. tostring(score) end",
    function_for_item="t",
    function_for_common="",
)

REQUEST = {"common": {"uid": 7}, "items": [{"item_id": "a", "score": 1}]}
