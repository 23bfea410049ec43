"""The operator and resource-type registries a server or a run builds on.

The built-in ones (:mod:`pineapple.builtins`), or, for benchmarks
(``--bench-stubs``), the public engines' ``pine_bench`` stubs over them
(:mod:`pineapple.operators.bench`): the one place that chooses.
"""

from __future__ import annotations

from pineapple import builtins, resource
from pineapple.engine import OperatorRegistry

__all__ = ["operator_registry", "resource_registry"]


def operator_registry(bench_stubs: bool) -> OperatorRegistry:
    """The built-in operators, or the benchmark registry (stubs over the built-ins)."""
    if not bench_stubs:
        return builtins.operator_registry()
    from pineapple.operators.bench import bench_operator_registry

    return bench_operator_registry()


def resource_registry(bench_stubs: bool) -> resource.Registry:
    """The built-in resource types, or the benchmark registry (stubs over the built-ins)."""
    if not bench_stubs:
        return builtins.resource_registry()
    from pineapple.operators.bench import bench_resource_registry

    return bench_resource_registry()
