"""Isolated operator and resource registries for DSL and codegen tests."""

from __future__ import annotations

import datetime
from typing import Any

from dsl import BaseResource
from pineapple import ParamSpec
from pineapple.engine import OperatorRegistry, OperatorSchema
from pineapple.resource import Registry, ResourceSchema

OPERATOR_SCHEMAS = [
    OperatorSchema(
        "recall_resource",
        "recall",
        "Recall the items of a resource whose value is a list of item dicts.",
        {"resource_name": ParamSpec("string", required=True, description="The resource.")},
    ),
    OperatorSchema(
        "transform_resource_lookup",
        "transform",
        "Look each item's key up in a mapping resource.",
        {
            "resource_name": ParamSpec("string", required=True),
            "lookup_key": ParamSpec("string", required=True),
            "output_field": ParamSpec("string", required=True),
            "default_value": ParamSpec("any"),
        },
    ),
    OperatorSchema(
        "filter_condition",
        "filter",
        "Drop items whose input field equals value.",
        {"value": ParamSpec("any", required=True)},
    ),
    OperatorSchema(
        "reorder_sort",
        "reorder",
        "Sort items by their input field.",
        {"order": ParamSpec("string", default="desc")},
    ),
    OperatorSchema(
        "filter_truncate",
        "filter",
        "Keep the first top_n items.",
        {"top_n": ParamSpec("int", required=True, templatable=True)},
    ),
    OperatorSchema(
        "merge_dedup",
        "merge",
        "Merge the items of the source operators, dropping duplicates.",
        {"fields": ParamSpec("list")},
    ),
]

RESOURCE_SCHEMAS = [
    ResourceSchema(
        "static",
        "A constant value.",
        default_interval=-1,
        params={"value": ParamSpec("any", required=True)},
    ),
    ResourceSchema(
        "table_file",
        "A table read from a file.",
        default_interval=300,
        params={
            "path": ParamSpec("string", required=True),
            "key_column": ParamSpec("string", default="id"),
            "port": ParamSpec("int"),
        },
    ),
]


def _never(params: dict[str, Any]) -> Any:
    raise AssertionError("the DSL must not build operators or fetchers")


def operator_registry() -> OperatorRegistry:
    """A fresh registry holding :data:`OPERATOR_SCHEMAS`."""
    registry = OperatorRegistry()
    for schema in OPERATOR_SCHEMAS:
        registry.register(schema, _never)
    return registry


def resource_registry() -> Registry:
    """A fresh registry holding :data:`RESOURCE_SCHEMAS`."""
    registry = Registry()
    for schema in RESOURCE_SCHEMAS:
        registry.register(schema, _never)
    return registry


class StaticValue(BaseResource):
    """Hand-written in the generated shape (type ``static``)."""

    _name = "static"
    _default_interval = -1
    _params_schema = {"value": ParamSpec(type="any", required=True)}

    def __init__(self, *, value: Any, interval: float | datetime.timedelta | None = None) -> None:
        super().__init__(interval=interval, value=value)


class TableFile(BaseResource):
    """Hand-written in the generated shape (type ``table_file``)."""

    _name = "table_file"
    _default_interval = 300
    _params_schema = {"path": ParamSpec(type="string", required=True)}

    def __init__(
        self,
        *,
        path: str,
        key_column: str = "id",
        port: int | str | None = None,
        interval: float | datetime.timedelta | None = None,
    ) -> None:
        super().__init__(interval=interval, path=path, key_column=key_column, port=port)
