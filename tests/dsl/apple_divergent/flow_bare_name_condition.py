from apple import Flow

# A condition naming a declared common field bare (no {{x}} marker). Apple
# gives its control operator no common_input, so the Go engine's Lua sees x
# as nil and the request fails; ours lists x, so the branch works.
flow = Flow(name="bare_name_condition", common_input=["x"], item_output=["item_id"])
flow.recall_static(items=[{"item_id": "a"}, {"item_id": "b"}], item_output=["item_id"])
flow.if_("x > 0")
flow.filter_truncate(top_n=1)
flow.end_if_()

REQUEST = {"common": {"x": 5}, "items": []}
