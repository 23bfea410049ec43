from apple import Flow

flow = Flow(name="sources", item_output=["item_id"])
flow.recall_static(
    name="recall_a", items=[{"item_id": "1"}, {"item_id": "2"}], item_output=["item_id"]
)
flow.recall_static(
    name="recall_b", items=[{"item_id": "2"}, {"item_id": "3"}], item_output=["item_id"]
)
flow.merge_dedup(
    name="dedup", item_input=["item_id"], strategy="first", sources=["recall_a", "recall_b"]
)

REQUEST = {"common": {}, "items": []}
