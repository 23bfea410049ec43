from apple import Flow

flow = Flow(
    name="lua_item_filter", item_input=["item_id", "price"], item_output=["item_id", "cheap"]
)
flow.transform_by_lua(
    item_input=["price"],
    item_output=["cheap"],
    lua_script="function is_cheap() if price < 10 then return 1 else return 0 end end",
    function_for_item="is_cheap",
    function_for_common="",
)
flow.filter_condition(item_input=["cheap"], value=0)

REQUEST = {"common": {}, "items": [{"item_id": "a", "price": 5}, {"item_id": "b", "price": 50}]}
