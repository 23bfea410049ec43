"""``transform_bench_sleep``: a benchmark-only I/O-simulating operator.

The public engines ship it beside ``transform_bench_cpu`` for their
cross-runtime benchmarks: each invocation sleeps ``delay_ms`` milliseconds,
then writes ``_bench_slept = true`` on every item.
"""

from __future__ import annotations

import time
from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["MAX_DELAY_MS", "SCHEMA", "SLEPT_FIELD", "TransformBenchSleep"]

MAX_DELAY_MS = 60_000
"""The longest ``delay_ms`` a config may ask for (a bigger one is refused at build)."""

SLEPT_FIELD = "_bench_slept"
"""The item field the operator writes (``true``)."""

SCHEMA = OperatorSchema(
    name="transform_bench_sleep",
    kind="transform",
    description="Benchmark-only I/O-simulating operator: sleeps delay_ms per invocation.",
    params={
        "delay_ms": ParamSpec(
            type="int", default=5, description="Milliseconds to sleep per invocation."
        ),
    },
    blocking=True,  # it sleeps: never on the event loop
)


class TransformBenchSleep(Operator):
    """Sleeps ``delay_ms`` (cut short by the request's deadline), marks every item slept."""

    concurrent_safe = True
    consumes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        delay = params.get("delay_ms", 5)
        if isinstance(delay, bool) or not isinstance(delay, int) or delay > MAX_DELAY_MS:
            raise ValueError(
                f"transform_bench_sleep: delay_ms must be an int <= {MAX_DELAY_MS}, got {delay!r}"
            )
        self.delay = max(delay, 0) / 1000.0  # a negative delay sleeps not at all, as Go's timer

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        # Bounded by delay_ms (at most MAX_DELAY_MS) and by the request's deadline.
        remaining = ctx.remaining()
        time.sleep(self.delay if remaining is None else min(self.delay, remaining))
        ctx.check_deadline(self.name)
        n = len(inp)
        if n:
            out.fill_column(SLEPT_FIELD, True, n)


register_operator(SCHEMA, TransformBenchSleep)
