from apple import Flow

# Identical auto-named operators: the second is suffixed _1, the third _2.
flow = Flow(name="twin_auto_names", item_output=["item_id"])
flow.recall_static(items=[{"item_id": i} for i in "abcdef"], item_output=["item_id"])
flow.filter_truncate(top_n=4)
flow.filter_truncate(top_n=4)
flow.filter_truncate(top_n=4)
flow.filter_truncate(top_n=3)

REQUEST = {"common": {}, "items": []}
