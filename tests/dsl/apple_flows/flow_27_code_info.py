from apple import Flow


def add_scoring(f):
    # $code_info names this function and the line of each call.
    f._add_op("reorder_sort", order="desc", item_input=["score"])
    f._add_op("filter_truncate", top_n=2)


flow = Flow(name="code_info", common_input=["tier"], item_output=["item_id", "score"])
flow._add_op(
    "recall_static",
    items=[
        {"item_id": "a", "score": 1},
        {"item_id": "b", "score": 3},
        {"item_id": "c", "score": 2},
    ],
    item_output=["item_id", "score"],
)
flow.if_("{{tier}} == 'vip'")
add_scoring(flow)
flow.elseif_("{{tier}} == 'new'")
flow._add_op("reorder_sort", order="asc", item_input=["score"])
flow.else_()
flow._add_op("filter_truncate", top_n=1)
flow.end_if_()

REQUEST = {"common": {"tier": "vip"}, "items": []}
