"""``recall_feed_data``: recalls items from a ``feed_data`` table by bitmap indices.

For each ``match`` entry ``column -> common field``, the request's value of
that common field must equal the row's value in ``column`` (an indexed
column); a list value matches any of its elements; an absent (None) common
value drops that condition. Conditions are ANDed by intersecting bitmaps:
the table is never scanned. Rows are ordered by ``order_by`` (``descending``),
paged by the common fields named by ``page_field`` (0-based) and
``size_field``, and emitted with the columns of ``$metadata.item_output``
(``item_id`` falls back to the table's id column when the table has no such
column).
"""

from __future__ import annotations

from typing import Any

from pineapple import Context, ParamSpec, resource
from pineapple.engine import (
    Operator,
    OperatorInput,
    OperatorOutput,
    OperatorSchema,
    register_operator,
)

from ._feed_table import FeedTable

__all__ = ["RECALL_FEED_DATA_SCHEMA", "RecallFeedData"]

RECALL_FEED_DATA_SCHEMA = OperatorSchema(
    name="recall_feed_data",
    kind="recall",
    description="Recalls items from a feed_data table by exact-match bitmap indices.",
    params={
        "resource_name": ParamSpec(
            type="string", required=True, description="Name of a feed_data resource."
        ),
        "match": ParamSpec(
            type="dict",
            description="Indexed column -> common field whose value it must equal (AND).",
        ),
        "order_by": ParamSpec(
            type="string", description="Column to order by (default: load order)."
        ),
        "descending": ParamSpec(type="bool", default=False, description="Order descending."),
        "page_field": ParamSpec(
            type="string", default="page", description="Common field with the 0-based page."
        ),
        "size_field": ParamSpec(
            type="string", default="size", description="Common field with the page size."
        ),
        "default_size": ParamSpec(
            type="int", default=100, description="Page size when the size field is absent."
        ),
        "max_size": ParamSpec(
            type="int", default=1000, description="Upper bound of the page size."
        ),
    },
)


def _non_negative_int(value: Any, default: int) -> int:
    if value is None or isinstance(value, bool):
        return default
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default


class RecallFeedData(Operator):
    """Adds the matching rows of a ``FeedTable`` as items (see the module docstring)."""

    additive_writes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = params["resource_name"]
        if not isinstance(self.resource_name, str) or not self.resource_name:
            raise ValueError("recall_feed_data: resource_name must be a non-empty string")
        match = params.get("match") or {}
        if not isinstance(match, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in match.items()
        ):
            raise ValueError("recall_feed_data: match must map column names to common field names")
        self.match: dict[str, str] = match
        order_by = params.get("order_by")
        if order_by is not None and not isinstance(order_by, str):
            raise ValueError("recall_feed_data: order_by must be a column name")
        self.order_by: str | None = order_by or None
        self.descending = bool(params.get("descending", False))
        self.page_field = str(params.get("page_field", "page"))
        self.size_field = str(params.get("size_field", "size"))
        self.default_size = int(params.get("default_size", 100))
        self.max_size = int(params.get("max_size", 1000))
        if self.default_size < 0 or self.max_size < 0:
            raise ValueError("recall_feed_data: default_size and max_size must be >= 0")
        self.columns: tuple[str, ...] = ()

    def prepare(self) -> None:
        self.columns = self.meta.item_output

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        common = inp.common
        conditions = {
            column: common.get(field)
            for column, field in self.match.items()
            if common.get(field) is not None
        }
        size = min(_non_negative_int(common.get(self.size_field), self.default_size), self.max_size)
        offset = _non_negative_int(common.get(self.page_field), 0) * size
        with resource.borrow(ctx, self.resource_name, "recall_feed_data") as table:
            if not isinstance(table, FeedTable):
                raise TypeError(
                    f'recall_feed_data: resource "{self.resource_name}" is '
                    f"{type(table).__name__}, want a feed_data table"
                )
            rows = table.ids_matching(conditions)
            order = table.order(rows, self.order_by, self.descending, offset, size)
            items = table.project(order, self._fields(table))
        out.add_items(items)

    def _fields(self, table: FeedTable) -> list[tuple[str, str]]:
        if not self.columns:
            return [(name, name) for name in table.columns]
        known = table.columns
        return [
            (name, table.id_column if name == "item_id" and name not in known else name)
            for name in self.columns
        ]


register_operator(RECALL_FEED_DATA_SCHEMA, RecallFeedData)
