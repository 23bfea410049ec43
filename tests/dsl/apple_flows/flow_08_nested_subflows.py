from apple import Flow, SubFlow

inner = SubFlow(name="score")
inner.transform_by_lua(
    item_input=["ctr"],
    item_output=["score"],
    lua_script="function s() return ctr * 100 end",
    function_for_item="s",
    function_for_common="",
)
outer = SubFlow(name="stage")
outer.recall_static(
    items=[{"item_id": "a", "ctr": 0.25}, {"item_id": "b", "ctr": 0.5}],
    item_output=["item_id", "ctr"],
)
outer.add_subflow(inner)
outer.reorder_sort(item_input=["score"])

flow = Flow(name="nested_subflows", item_output=["item_id", "score"])
flow.add_subflow(outer)

REQUEST = {"common": {}, "items": []}
