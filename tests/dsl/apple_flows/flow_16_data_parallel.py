from apple import Flow

flow = Flow(name="data_parallel", item_input=["item_id", "x"], item_output=["item_id", "y"])
flow.transform_by_lua(
    item_input=["x"],
    item_output=["y"],
    data_parallel=4,
    lua_script="function sq() return x * x end",
    function_for_item="sq",
    function_for_common="",
)

REQUEST = {"common": {}, "items": [{"item_id": str(i), "x": i} for i in range(10)]}
