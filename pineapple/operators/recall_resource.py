"""``recall_resource``: recalls items from a resource whose value is a list of item dicts."""

from __future__ import annotations

from typing import Any

from .. import resource
from .._context import Context
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import go_type_name
from ._resource_param import RESOURCE_NAME_PARAM

__all__ = ["SCHEMA", "RecallResource"]

SCHEMA = OperatorSchema(
    name="recall_resource",
    kind="recall",
    description="Recalls items from a named resource.",
    params={
        "resource_name": RESOURCE_NAME_PARAM,
    },
)


class RecallResource(Operator):
    """Adds a copy of every item of the resource value (a list of dicts)."""

    additive_writes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        name = params["resource_name"]
        if not isinstance(name, str):
            raise ValueError("recall_resource: resource_name must be a string")
        self.resource_name = name

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        with resource.borrow(ctx, self.resource_name, "recall_resource") as value:
            if not isinstance(value, list | tuple):
                raise TypeError(
                    f'recall_resource: resource "{self.resource_name}" is '
                    f"{go_type_name(value)}, want []map[string]any"
                )
            rows: list[dict[str, Any]] = []
            for i, row in enumerate(value):
                if not isinstance(row, dict):
                    raise TypeError(
                        f"recall_resource: items[{i}] is {go_type_name(row)}, want map[string]any"
                    )
                rows.append(dict(row))
        out.add_items(rows)


register_operator(SCHEMA, RecallResource)
