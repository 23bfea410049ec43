"""The demo flow that ``make run`` serves (compiles to ``configs/demo.json``).

Recall candidates from a JSON file, look each item's click-through rate up in
a second file, drop offline items, sort by CTR and keep the top five::

    pineapple compile configs/demo_flow.py -o configs/demo.json

File paths are relative to this config's folder (``configs/``), whatever the working directory.
"""

from dsl import Flow
from dsl.generated.resources import JsonFileResource

flow = Flow(
    "demo_recommend",
    common_input=["user_id"],
    item_output=["item_id", "category", "ctr"],
)

# json_file reloads a file when its mtime or size changes (checked every 60 s by default).
flow.resource("candidates", JsonFileResource(path="data/candidates.json", format="list"))
flow.resource(
    "item_ctr", JsonFileResource(path="data/item_ctr.json", format="mapping", interval=30)
)

flow.recall_resource(
    name="recall_candidates",
    resource_name="candidates",
    item_output=["item_id", "category", "status"],
)
flow.transform_resource_lookup(
    name="lookup_ctr",
    resource_name="item_ctr",
    lookup_key="item_id",
    output_field="ctr",
    default_value=0.0,
    item_input=["item_id"],
    item_output=["ctr"],
)
flow.filter_condition(name="drop_offline", value="offline", item_input=["status"])
flow.reorder_sort(name="sort_by_ctr", order="desc", item_input=["ctr"])
flow.filter_truncate(name="top_5", top_n=5)
