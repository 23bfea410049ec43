"""``transform_bench_cpu``: a benchmark-only CPU-bound operator.

The public engines ship it for their cross-runtime benchmarks: per item it
runs ``iterations`` rounds of an iterative fib(32) folded into a float, and
writes the (bit-identical across runtimes) result to ``item_output[0]``.
"""

from __future__ import annotations

from typing import Any

from .._context import Context
from .._params import ParamSpec
from ..engine import Operator, OperatorInput, OperatorOutput, OperatorSchema, register_operator

__all__ = ["SCHEMA", "TransformBenchCPU", "cpu_work"]

SCHEMA = OperatorSchema(
    name="transform_bench_cpu",
    kind="transform",
    description="Benchmark-only CPU-bound operator: iterative fib(32) per item.",
    params={
        "iterations": ParamSpec(type="int", default=100, description="Rounds of fib(32) per item."),
    },
)


def _fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(2, n + 1):
        a, b = b, a + b
    return b if n > 1 else n


_CHECK_EVERY = 64
"""Rounds between two deadline checks (about 0.1 ms of work)."""


def cpu_work(iterations: int, ctx: Context | None = None, operator: str | None = None) -> float:
    """The per-item result: ``acc = (acc + fib(32)) / 1.000001``, ``iterations`` times.

    With ``ctx``, its deadline is checked every 64 rounds
    (:class:`~pineapple.DeadlineExceededError` naming ``operator``).
    """
    timed = ctx if ctx is not None and ctx.deadline is not None else None
    acc = 0.0
    # Bounded by ``iterations`` and, with a deadline, by it.
    for i in range(iterations):
        if timed is not None and i % _CHECK_EVERY == 0:
            timed.check_deadline(operator)
        acc += float(_fib(32))
        acc /= 1.000001
    return acc


class TransformBenchCPU(Operator):
    """Writes ``cpu_work(iterations)`` to ``item_output[0]`` of every item."""

    concurrent_safe = True
    consumes_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        iterations = params.get("iterations", 100)
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
            raise ValueError(f"transform_bench_cpu: iterations must be >= 0, got {iterations!r}")
        self.iterations = iterations

    def prepare(self) -> None:
        self.dst = self.meta.first("item_output", "transform_bench_cpu")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        n = len(inp)
        if n:
            # Bounded by the item count and the request's deadline (checked inside).
            out.set_column(self.dst, [cpu_work(self.iterations, ctx, self.name) for _ in range(n)])


register_operator(SCHEMA, TransformBenchCPU)
