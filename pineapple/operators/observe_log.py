"""``observe_log``: logs the declared input fields; changes nothing."""

from __future__ import annotations

import logging
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator
from ..engine._gofmt import go_json

__all__ = ["SCHEMA", "ObserveLog"]

_log = logging.getLogger("pineapple.operators.observe_log")

SCHEMA = OperatorSchema(
    name="observe_log",
    kind="observe",
    description="Reads declared input fields and writes them to the engine's logger. "
    "Read-only: it produces no output fields and does not modify the DataFrame.",
    params={
        "log_prefix": ParamSpec(
            type="string", default="", description="Prefix prepended to each log line."
        ),
    },
)


class ObserveLog(Operator):
    """Logs ``{"common": {...}, "items": [...]}`` of its declared inputs at INFO."""

    def __init__(self, params: dict[str, Any]) -> None:
        prefix = params.get("log_prefix", "")
        self.prefix = prefix if isinstance(prefix, str) else ""

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        if not _log.isEnabledFor(logging.INFO):
            return
        snapshot: dict[str, Any] = {}
        m = self.meta
        if m.common_input:
            snapshot["common"] = {k: inp.common.get(k) for k in m.common_input}
        n = len(inp)
        if m.item_input and n:
            cols = [(k, inp.frame.column(k)) for k in m.item_input]  # as read, no defaults
            snapshot["items"] = [{k: col[i] for k, col in cols} for i in range(n)]
        try:
            text = go_json(snapshot).decode()
        except TypeError as exc:
            _log.info("[observe_log] %s marshal error: %s", self.prefix, exc)
            return
        if self.prefix:
            _log.info("[observe_log] %s %s", self.prefix, text)
        else:
            _log.info("[observe_log] %s", text)


register_operator(SCHEMA, ObserveLog)
