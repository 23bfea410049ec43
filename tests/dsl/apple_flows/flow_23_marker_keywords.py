from apple import Flow

# Apple's row-set marker keywords: True widens the operator's markers, False
# leaves the type's own (a call can widen a marker, never narrow it).
flow = Flow(name="marker_keywords", item_output=["item_id", "score"])
flow.recall_static(
    items=[
        {"item_id": "a", "score": 1},
        {"item_id": "b", "score": 3},
        {"item_id": "c", "score": 2},
    ],
    item_output=["item_id", "score"],
)
flow._add_op("filter_truncate", top_n=2, consumes_row_set=False)
flow.reorder_sort(order="desc", item_input=["score"], consumes_row_set=True)
flow.transform_copy(
    direction="item_to_item",
    item_input=["score"],
    item_output=["rank_score"],
    consumes_row_set=True,
    mutates_row_set=False,
)
flow.reorder_sort(order="asc", item_input=["rank_score"])

REQUEST = {"common": {}, "items": []}
