from apple import Flow, SubFlow

recall = SubFlow(name="recall")
recall.recall_static(
    items=[{"item_id": "a", "ctr": 0.1}, {"item_id": "b", "ctr": 0.7}],
    item_output=["item_id", "ctr"],
)
rank = SubFlow(name="rank")
rank.reorder_sort(item_input=["ctr"], order="desc")
rank.filter_truncate(top_n=1)

flow = Flow(name="subflows", item_output=["item_id", "ctr"], sub_flows=[recall, rank])

REQUEST = {"common": {}, "items": []}
