from apple import Flow, SubFlow

sf = SubFlow(name="calc")
sf._add_op(
    "transform_by_lua",
    common_input=["x"],
    common_output=["y"],
    lua_script="function f() return x + 1 end",
    function_for_common="f",
    function_for_item="",
)
sf._add_op(
    "transform_by_lua",
    common_input=["y"],
    common_output=["z"],
    name="final_z",
    lua_script="function g() return y * 3 end",
    function_for_common="g",
    function_for_item="",
)

flow = Flow(name="add_op", common_input=["x"], common_output=["z"], sub_flows=[sf])

REQUEST = {"common": {"x": 4}, "items": []}
