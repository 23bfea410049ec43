"""Helpers for the masking tests: configs, and a ``--plugin`` for the server process.

Importing this module (``--plugin tests.reliability._masking``) registers the
``test_quote_resource`` operator: it logs, warns and (with ``fail``) raises a
message quoting the string value of a resource, as a careless operator or a
driver error quoting an address would.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson

from pineapple import Context, ExecutionError, ParamSpec, resource
from pineapple.engine import (
    Operator,
    OperatorInput,
    OperatorOutput,
)
from tests._operators import register_test_operator

PLUGIN = "tests.reliability._masking"
_log = logging.getLogger("tests.reliability.quote")


class QuoteResource(Operator):
    """Logs, warns and (with ``fail``) raises a message quoting a resource's value."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name = params["resource_name"]
        self.fail = params["fail"]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        provider = resource.from_context(ctx)
        handle = provider.get(self.resource_name) if provider is not None else None
        if handle is None:
            raise ExecutionError(f"resource {self.resource_name!r} is not loaded")
        with handle as value:
            text = str(value)
        _log.warning("operator log quotes %s", text)
        if self.fail:
            raise ExecutionError(f"operator error quotes {text}")
        out.warn(f"operator warning quotes {text}")


register_test_operator(
    "test_quote_resource",
    QuoteResource,
    "quotes a resource's value in a log, warning and error.",
    params={
        "resource_name": ParamSpec(type="string", required=True),
        "fail": ParamSpec(type="bool", default=False),
    },
)
_META = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id"]}


def static_entry(value: Any) -> dict[str, Any]:
    """A ``static`` resource entry holding ``value`` (never refreshed)."""
    return {"type": "static", "interval": -1, "params": {"value": value}}


def config(resources: Mapping[str, Mapping[str, Any]], quote: str | None = None) -> bytes:
    """A unified config that recalls from the ``items`` resource and declares ``resources``.

    With ``quote``, groups ``warn`` and ``fail`` run ``test_quote_resource`` on it.
    """
    operators: dict[str, Any] = {
        "recall": {"type_name": "recall_resource", "resource_name": "items", "$metadata": _META}
    }
    groups: dict[str, Any] = {"main": {"pipeline": ["recall"]}}
    if quote is not None:
        for group, fail in (("warn", False), ("fail", True)):
            operators[f"quote_{group}"] = {
                "type_name": "test_quote_resource",
                "resource_name": quote,
                "fail": fail,
                "$metadata": {**_META, "item_output": []},
            }
            groups[group] = {"pipeline": ["recall", f"quote_{group}"]}
    root = {
        "_PINEAPPLE_VERSION": 1,
        "_PINEAPPLE_CREATE_TIME": "2026-01-01T00:00:00Z",
        "pipeline_config": {"operators": operators},
        "pipeline_group": groups,
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id"],
        },
        "resource_config": {"items": static_entry([{"id": "a"}]), **resources},
    }
    return orjson.dumps(root, option=orjson.OPT_INDENT_2)
