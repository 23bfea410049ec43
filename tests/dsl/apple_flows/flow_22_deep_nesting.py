from apple import Flow, SubFlow

leaf = SubFlow(name="leaf")
leaf.if_("{{mode}} == 'x'")
leaf.transform_by_lua(
    item_input=["v"],
    item_output=["v"],
    lua_script="function a() return v + 100 end",
    function_for_item="a",
    function_for_common="",
)
leaf.end_if_()
mid = SubFlow(name="mid")
mid.add_subflow(leaf)
mid.observe_log(item_input=["v"], log_prefix="mid")
top = SubFlow(name="top")
top.if_("{{enabled}} == true")
top.add_subflow(mid)
top.end_if_()

flow = Flow(
    name="deep_nesting",
    common_input=["mode", "enabled"],
    item_input=["item_id", "v"],
    item_output=["item_id", "v"],
    sub_flows=[top],
)

REQUEST = {"common": {"mode": "x", "enabled": True}, "items": [{"item_id": "a", "v": 1}]}
