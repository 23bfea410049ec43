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

__all__ = ["render_operator_reference", "render_resource_reference"]

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
    """The operator reference page for ``schemas`` (grouped by kind, sorted by name)."""
    ordered = sorted(
        schemas,
        key=lambda s: (_KIND_ORDER.index(s.kind) if s.kind in _KIND_ORDER else 99, s.name),
    )
    out = [
        "# Operator reference",
        "",
        "Generated from the operator registry when the docs are built: every",
        "registered operator type with its params (type, default, description).",
        "Every operator also takes the `$metadata` field lists (`common_input`,",
        "`common_output`, `item_input`, `item_output`) and the per-operator options",
        "(`sources`, `skip`, defaults, `strict_*`, `data_parallel`, `debug`).",
        "",
    ]
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
