from apple import Flow, SubFlow

scoring = SubFlow(
    name="scoring", common_input=["weight"], item_input=["ctr"], item_output=["score"]
)
scoring.transform_by_lua(
    common_input=["weight"],
    item_input=["ctr"],
    item_output=["raw"],
    lua_script="function r() return ctr * weight end",
    function_for_item="r",
    function_for_common="",
)
scoring.transform_by_lua(
    item_input=["raw"],
    item_output=["score"],
    lua_script="function s() return raw + 1 end",
    function_for_item="s",
    function_for_common="",
)

flow = Flow(
    name="subflow_contract",
    common_input=["weight"],
    item_input=["item_id", "ctr"],
    item_output=["item_id", "score"],
    sub_flows=[scoring],
)

REQUEST = {"common": {"weight": 10}, "items": [{"item_id": "a", "ctr": 0.5}]}
