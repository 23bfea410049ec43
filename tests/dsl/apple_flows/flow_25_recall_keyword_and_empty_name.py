from apple import Flow

# recall=True on a typed method (accepted and ignored: the type says it
# recalls) and name="" (auto-named).
flow = Flow(name="recall_keyword", item_output=["item_id"])
flow.recall_static(items=[{"item_id": "a"}, {"item_id": "b"}], item_output=["item_id"], recall=True)
flow.recall_static(items=[{"item_id": "c"}], item_output=["item_id"], recall=True, name="")
flow.filter_truncate(top_n=2, name="")

REQUEST = {"common": {}, "items": []}
