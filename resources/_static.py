"""``static``: a value written in the config itself, served as given."""

from __future__ import annotations

from typing import Any

from pineapple import ParamSpec, ResourceSchema, register_resource
from pineapple.resource import Fetcher, redact, redact_value

from ._printing import deep_sizeof, human_bytes, json_preview, shape_of

__all__ = ["STATIC_SCHEMA", "StaticPrinter", "static_fetcher"]


class StaticPrinter:
    """Shape and approximate size; the description is the value as JSON (truncated).

    DSN passwords inside the value are masked (``pineapple.resource.redact``).
    """

    def summarize(self, value: Any) -> str:
        return f"static: {shape_of(value)}, ~{human_bytes(deep_sizeof(value))}"

    def describe(self, value: Any) -> str:
        return redact(f"{self.summarize(value)}\n{json_preview(redact_value(value))}")


STATIC_SCHEMA = ResourceSchema(
    name="static",
    description="A constant value from the config (any JSON), served as given; never refreshed.",
    default_interval=-1,
    params={
        "value": ParamSpec(
            type="any", required=True, description="The value to serve (any JSON value)."
        ),
    },
    printer=StaticPrinter(),
)


def static_fetcher(params: dict[str, Any]) -> Fetcher:
    """The fetcher of a ``static`` resource: returns ``params['value']`` itself."""
    value = params["value"]
    return lambda: value


register_resource(STATIC_SCHEMA, static_fetcher)
