"""``static``: a value written in the config itself, served as given."""

from __future__ import annotations

from typing import Any

from pineapple import ParamSpec, ResourceSchema, register_resource
from pineapple.resource import NOT_MODIFIED, Fetcher
from pineapple.resource.lowlevel import redact, redact_value

from ._printing import deep_sizeof, estimate_sizeof, human_bytes, json_preview, shape_of

__all__ = ["STATIC_SCHEMA", "StaticFetcher", "StaticPrinter", "static_fetcher"]


class StaticPrinter:
    """Shape and approximate size; the description is the value as JSON (truncated).

    DSN passwords inside the value are masked (``pineapple.resource.lowlevel.redact``).
    """

    def summarize(self, value: Any) -> str:
        return f"static: {shape_of(value)}, ~{human_bytes(deep_sizeof(value))}"

    def describe(self, value: Any) -> str:
        return redact(f"{self.summarize(value)}\n{json_preview(redact_value(value))}")

    def size_of(self, value: Any) -> int:
        """An estimate of the bytes the value holds (sampled above 1,000 entries)."""
        return estimate_sizeof(value)


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


class StaticFetcher:
    """Returns the configured value once, then ``NOT_MODIFIED``: it cannot change.

    A new value only comes with a config entry that differs, which builds a new
    fetcher. ``carry_over`` (a reload that keeps the entry) marks the value as
    already served, so a refresh after the reload is ``not_modified`` too.
    """

    def __init__(self, value: Any) -> None:
        self._value = value
        self._served = False

    def __call__(self) -> Any:
        if self._served:
            return NOT_MODIFIED
        self._served = True
        return self._value

    def carry_over(self, value: Any) -> None:
        self._served = True


def static_fetcher(params: dict[str, Any]) -> Fetcher:
    """The fetcher of a ``static`` resource: ``params['value']``, then ``NOT_MODIFIED``."""
    return StaticFetcher(params["value"])


register_resource(STATIC_SCHEMA, static_fetcher)
