from apple import Flow

flow = Flow(name="filter_null", item_input=["item_id", "tag"], item_output=["item_id", "tag"])
flow.filter_condition(item_input=["tag"], value=None)

REQUEST = {"common": {}, "items": [{"item_id": "a", "tag": None}, {"item_id": "b", "tag": "t"}]}
