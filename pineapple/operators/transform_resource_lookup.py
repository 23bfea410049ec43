"""``transform_resource_lookup``: enriches items from a mapping resource."""

from __future__ import annotations

import math
from itertools import repeat
from typing import Any

from .. import resource
from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import format_f, format_value, go_type_name
from ._resource_param import RESOURCE_NAME_PARAM

__all__ = ["SCHEMA", "ResourceLookup", "lookup_key_text"]

SCHEMA = OperatorSchema(
    name="transform_resource_lookup",
    kind="transform",
    description="Enriches items by looking up values from a named resource.",
    params={
        "resource_name": RESOURCE_NAME_PARAM,
        "lookup_key": ParamSpec(
            type="string",
            required=True,
            description="Item field whose value is used as the lookup key.",
        ),
        "output_field": ParamSpec(
            type="string", required=True, description="Item field to write the looked-up value to."
        ),
        "default_value": ParamSpec(
            type="any",
            description="Value used when the key is not found (unset: missing keys are skipped).",
        ),
    },
)


def lookup_key_text(value: Any) -> str:
    """The mapping key for an item value: strings as-is, integral numbers without '.0'."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 9.3e18:
        return str(int(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return format_f(value)
    return format_value(value)


def _plain_lookup(table: dict[Any, Any]) -> bool:
    """True when ``table.get(k, d)`` equals ``table[k] if k in table else d``."""
    cls = type(table)
    return cls is dict or (
        cls.get is dict.get
        and cls.__getitem__ is dict.__getitem__
        and cls.__contains__ is dict.__contains__
    )


class ResourceLookup(Operator):
    """``output_field = table[str(item[lookup_key])]`` for every item."""

    concurrent_safe = True

    def __init__(self, params: dict[str, Any]) -> None:
        for key in ("resource_name", "lookup_key", "output_field"):
            if not isinstance(params[key], str):
                raise ValueError(f"transform_resource_lookup: {key} must be a string")
        self.resource_name: str = params["resource_name"]
        self.lookup_key: str = params["lookup_key"]
        self.output_field: str = params["output_field"]
        self.has_default = "default_value" in params
        self.default = params.get("default_value")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        with resource.borrow(ctx, self.resource_name, "transform_resource_lookup") as table:
            if not isinstance(table, dict):
                raise TypeError(
                    f'transform_resource_lookup: resource "{self.resource_name}" is '
                    f"{go_type_name(table)}, want map[string]any"
                )
            dst, has_default, default = self.output_field, self.has_default, self.default
            keys = inp.column(self.lookup_key)
            if has_default and _plain_lookup(table) and set(map(type, keys)) <= {str}:
                # Fast path (the common case): every key is already its lookup text
                # and ``get`` means ``in`` + ``[]``, so one C-level map writes the column.
                out.set_column(dst, list(map(table.get, keys, repeat(default))))
                return
            for i, raw in enumerate(keys):
                if raw is None:
                    if has_default:
                        out.set_item(i, dst, default)
                    continue
                key = lookup_key_text(raw)
                if key in table:
                    out.set_item(i, dst, table[key])
                elif has_default:
                    out.set_item(i, dst, default)


register_operator(SCHEMA, ResourceLookup)
