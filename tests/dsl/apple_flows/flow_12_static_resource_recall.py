from apple import BaseResource, Flow


class StaticResource(BaseResource):
    _name = "static"
    _default_interval = -1

    def __init__(self, *, value, interval=None):
        super().__init__(interval=interval, value=value)


flow = Flow(name="static_resource_recall", item_output=["item_id", "pop"])
flow.resource(
    "hot_items", StaticResource(value=[{"item_id": "h1", "pop": 3}, {"item_id": "h2", "pop": 9}])
)
flow.recall_resource(resource_name="hot_items", item_output=["item_id", "pop"])
flow.reorder_sort(item_input=["pop"], order="desc")

REQUEST = {"common": {}, "items": []}
