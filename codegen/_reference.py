"""Render the docs' reference pages: every operator and resource type, every param.

Like the typed DSL classes, the pages are written from the registries, so
they cannot drift from the code: ``make docs`` renders them at build time
(the mkdocs hook ``codegen/_mkdocs_hooks.py``), and a test checks that every
registered type and param appears.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pineapple import ParamSpec
from pineapple.engine import OperatorSchema
from pineapple.resource import ResourceSchema

__all__ = [
    "BENCHMARK_PREFIX",
    "is_benchmark_only",
    "render_benchmark_reference",
    "render_operator_reference",
    "render_resource_reference",
]

BENCHMARK_PREFIX = "transform_bench_"
"""The public engines' name for a built-in that only benchmarks use (``transform_bench_cpu``):
registered by default (configs and fixtures name it) but documented with the benchmark
operators, not in the user's reference."""


def is_benchmark_only(name: str) -> bool:
    """Whether a registered operator type is one only benchmarks use (see above)."""
    return name.startswith(BENCHMARK_PREFIX)


_KIND_ORDER = ("recall", "transform", "filter", "merge", "reorder", "observe")


def _cell(text: str) -> str:
    """Markdown-table-safe text: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(spec: ParamSpec) -> str:
    if spec.required:
        return "required"
    if spec.default is None:
        return "-"
    return f"`{_cell(json.dumps(spec.default, ensure_ascii=False))}`"


def _params_table(params: Mapping[str, ParamSpec]) -> list[str]:
    if not params:
        return ["No params.", ""]
    rows = ["| param | type | default | description |", "|---|---|---|---|"]
    for key in sorted(params):
        spec = params[key]
        notes = [n for n, on in (("templatable", spec.templatable), ("a path", spec.path)) if on]
        extra = f" ({', '.join(notes)})" if notes else ""
        rows.append(
            f"| `{key}` | {spec.type} | {_default(spec)} | {_cell(spec.description)}{extra} |"
        )
    return [*rows, ""]


def _interval(seconds: float) -> str:
    if seconds == -1:
        return "never refreshed (-1)"
    if seconds == 0:
        return "the manager default, 600 s (0)"
    return f"{seconds:g} s"


def render_operator_reference(schemas: Iterable[OperatorSchema]) -> str:
    """The operator reference page for ``schemas`` (grouped by kind, sorted by name), without
    the benchmark-only ones (:func:`is_benchmark_only`)."""
    intro = [
        "Generated from the operator registry when the docs are built: every",
        "registered operator type with its params (type, default, description).",
        "Every operator also takes the `$metadata` field lists (`common_input`,",
        "`common_output`, `item_input`, `item_output`) and the per-operator options",
        "(`sources`, `skip`, defaults, `strict_*`, `data_parallel`, `debug`).",
        "Operators only benchmarks use are in [Benchmark operators](benchmark-operators.md).",
    ]
    users = [s for s in schemas if not is_benchmark_only(s.name)]
    return _operator_page("Operator reference", intro, users)


def render_benchmark_reference(
    stubs: Iterable[OperatorSchema], builtins: Iterable[OperatorSchema]
) -> str:
    """The benchmark operators' page: the ``stubs`` of ``pineapple.operators.bench`` and the
    benchmark-only ones among ``builtins`` (the default registry's)."""
    intro = [
        "Generated from the registries when the docs are built: operators that only",
        "benchmarks use. The stubs (the public engines' benchmark builds) live in",
        "`pineapple.operators.bench`, in a registry of their own",
        "(`bench_operator_registry()`), never in the default one; a stub of the same",
        "name as a built-in replaces it there. The `realistic_*` benchmark configs run",
        "on it: `pineapple run CONFIG --bench-stubs`, `python -m benchmarks.engine_vs_old`.",
        f"The default registry also holds `{BENCHMARK_PREFIX}*` operators, which the",
        "public engines register by default too.",
    ]
    chosen = {s.name: s for s in builtins if is_benchmark_only(s.name)}
    chosen.update((s.name, s) for s in stubs)
    return _operator_page("Benchmark operators", intro, chosen.values())


def _operator_page(title: str, intro: list[str], schemas: Iterable[OperatorSchema]) -> str:
    ordered = sorted(
        schemas,
        key=lambda s: (_KIND_ORDER.index(s.kind) if s.kind in _KIND_ORDER else 99, s.name),
    )
    out = [f"# {title}", "", *intro, ""]
    for schema in ordered:
        blocking = ", blocking I/O" if schema.blocking else ""
        out += [
            f"## `{schema.name}`",
            "",
            f"*{schema.kind}{blocking}*. {_cell(schema.description)}",
        ]
        out += ["", *_params_table(schema.params)]
    return "\n".join(out)


def render_resource_reference(schemas: Iterable[ResourceSchema]) -> str:
    """The resource-type reference page for ``schemas`` (sorted by name)."""
    out: list[Any] = [
        "# Resource type reference",
        "",
        "Generated from the resource registry when the docs are built: every",
        "registered resource type, its default refresh interval and its params.",
        "",
    ]
    for schema in sorted(schemas, key=lambda s: s.name):
        out += [f"## `{schema.name}`", ""]
        if schema.description:
            out += [_cell(schema.description), ""]
        out += [f"Default interval: {_interval(schema.default_interval)}.", ""]
        out += _params_table(schema.params)
    return "\n".join(out)
