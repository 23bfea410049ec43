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


def cpu_work(iterations: int) -> float:
    """The per-item result: ``acc = (acc + fib(32)) / 1.000001``, ``iterations`` times."""
    acc = 0.0
    for _ in range(iterations):
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
        if not self.meta.item_output:
            raise ValueError("transform_bench_cpu: $metadata.item_output needs one field")
        self.dst = self.meta.item_output[0]

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        n = len(inp.items)
        if n:
            out.set_column(self.dst, [cpu_work(self.iterations) for _ in range(n)])


register_operator(SCHEMA, TransformBenchCPU)
