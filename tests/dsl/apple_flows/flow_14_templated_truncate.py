from apple import Flow

flow = Flow(
    name="templated_truncate",
    common_input=["limit"],
    item_input=["item_id"],
    item_output=["item_id"],
)
flow.filter_truncate(top_n="{{limit}}")

REQUEST = {"common": {"limit": 2}, "items": [{"item_id": "a"}, {"item_id": "b"}, {"item_id": "c"}]}
