from apple import Flow

flow = Flow(name="recall_sort_truncate", item_output=["item_id", "score"])
flow.recall_static(
    items=[
        {"item_id": "a", "score": 0.2},
        {"item_id": "b", "score": 0.9},
        {"item_id": "c", "score": 0.5},
    ],
    item_output=["item_id", "score"],
)
flow.reorder_sort(item_input=["score"], order="desc")
flow.filter_truncate(top_n=2)

REQUEST = {"common": {}, "items": []}
