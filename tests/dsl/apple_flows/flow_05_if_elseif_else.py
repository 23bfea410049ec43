from apple import Flow

flow = Flow(name="if_elseif_else", common_input=["score"], item_output=["item_id", "label"])
flow.recall_static(items=[{"item_id": "x"}, {"item_id": "y"}], item_output=["item_id"])
flow.if_("{{score}} > 80")
flow.transform_by_lua(
    item_input=["item_id"],
    item_output=["label"],
    lua_script='function f() return "high" end',
    function_for_item="f",
    function_for_common="",
)
flow.elseif_("{{score}} > 50")
flow.transform_by_lua(
    item_input=["item_id"],
    item_output=["label"],
    lua_script='function g() return "mid" end',
    function_for_item="g",
    function_for_common="",
)
flow.else_()
flow.transform_by_lua(
    item_input=["item_id"],
    item_output=["label"],
    lua_script='function h() return "low" end',
    function_for_item="h",
    function_for_common="",
)
flow.end_if_()

REQUEST = {"common": {"score": 60}, "items": []}
