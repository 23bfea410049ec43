from apple import BaseResource, Flow, SubFlow


class StaticResource(BaseResource):
    _name = "static"
    _default_interval = -1

    def __init__(self, *, value, interval=None):
        super().__init__(interval=interval, value=value)


enrich = SubFlow(name="enrich", required_resources=["titles"])
enrich.transform_resource_lookup(
    resource_name="titles",
    lookup_key="item_id",
    output_field="title",
    default_value="?",
    item_input=["item_id"],
    item_output=["title"],
)

flow = Flow(
    name="resource_lookup",
    item_input=["item_id"],
    item_output=["item_id", "title"],
    sub_flows=[enrich],
)
flow.resource("titles", StaticResource(value={"a": "Apple", "b": "Banana"}, interval=300))

REQUEST = {"common": {}, "items": [{"item_id": "a"}, {"item_id": "z"}]}
