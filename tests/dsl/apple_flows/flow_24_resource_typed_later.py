from apple import BaseResource, Flow


class Lookup(BaseResource):
    # No _default_interval: Apple writes 600.
    _name = "static"

    def __init__(self, *, value, interval=None):
        super().__init__(interval=interval, value=value)


# A BaseResource typed after construction.
hot = BaseResource(interval=600, value=[{"item_id": "h1", "pop": 3}, {"item_id": "h2", "pop": 9}])
hot.resource_type = "static"

flow = Flow(
    name="resource_typed_later", common_input=["item_key"], item_output=["item_id", "pop", "tag"]
)
flow.resource("hot_items", hot)
flow.resource("tags", Lookup(value={"h1": "fresh", "h2": "classic"}))
flow.recall_resource(resource_name="hot_items", item_output=["item_id", "pop"])
flow.transform_resource_lookup(
    resource_name="tags",
    lookup_key="item_id",
    output_field="tag",
    default_value="none",
    item_input=["item_id"],
    item_output=["tag"],
)

REQUEST = {"common": {"item_key": "x"}, "items": []}
