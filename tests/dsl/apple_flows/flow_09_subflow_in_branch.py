from apple import Flow, SubFlow

boost = SubFlow(name="boost")
boost.transform_by_lua(
    item_input=["score"],
    item_output=["score"],
    lua_script="function b() return score * 2 end",
    function_for_item="b",
    function_for_common="",
)
fallback = SubFlow(name="fallback")
fallback.filter_truncate(top_n=1)

flow = Flow(
    name="subflow_in_branch",
    common_input=["vip"],
    item_input=["item_id", "score"],
    item_output=["item_id", "score"],
)
flow.if_("{{vip}} == true")
flow.add_subflow(boost)
flow.else_()
flow.add_subflow(fallback)
flow.end_if_()

REQUEST = {
    "common": {"vip": True},
    "items": [{"item_id": "a", "score": 1}, {"item_id": "b", "score": 3}],
}
