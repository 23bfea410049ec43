from apple import Flow

flow = Flow(
    name="flow_options",
    item_input=["item_id", "s"],
    item_output=["item_id", "s"],
    storage_mode="column",
    log_prefix="[corpus] ",
    debug=True,
)
flow.reorder_sort(item_input=["s"], order="asc", debug=True)

REQUEST = {"common": {}, "items": [{"item_id": "a", "s": 3}, {"item_id": "b", "s": 1}]}
