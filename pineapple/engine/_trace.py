"""Operator traces: what each operator of one run did, in the Go server's shape.

A run records a trace only when asked (``Engine.run(..., trace=True)``; the
HTTP layer asks when the request's ``common`` holds ``"_return_trace":
true``). Each entry names the operator, its wall time and whether it was
skipped; operators in debug mode (``debug: true`` at the config root or on
the operator) also get ``input_snapshot`` and ``output_snapshot``, as in the
Go engine. Operators that never started (after a failure) have no entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._io import OperatorInput, OperatorOutput

__all__ = ["TraceEntry", "snapshot_input", "snapshot_output", "trace_json"]


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One operator of one run."""

    name: str
    duration_ns: int
    skipped: bool = False
    input_snapshot: dict[str, Any] | None = None
    output_snapshot: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The Go server's ``traceEntry``: empty fields left out, whole microseconds."""
        out: dict[str, Any] = {
            "name": self.name,
            "duration_ms": (self.duration_ns // 1000) / 1000.0,
        }
        if self.skipped:
            out["skipped"] = True
        if self.input_snapshot:
            out["input_snapshot"] = self.input_snapshot
        if self.output_snapshot:
            out["output_snapshot"] = self.output_snapshot
        return out


def trace_json(trace: list[TraceEntry]) -> list[dict[str, Any]]:
    """The ``trace`` list of a response."""
    return [entry.to_dict() for entry in trace]


def snapshot_input(inp: OperatorInput, item_fields: tuple[str, ...]) -> dict[str, Any]:
    """The operator's view: its common fields, and each item's ``item_input`` fields.

    Bounded by the request: one row per item, one value per declared field.
    """
    snap: dict[str, Any] = {}
    if inp.common:
        snap["common"] = dict(inp.common)
    if inp.items and item_fields:
        rows = [{f: row[f] for f in item_fields if f in row} for row in inp.items]
        if any(rows):
            snap["items"] = rows
    return snap


def snapshot_output(out: OperatorOutput) -> dict[str, Any]:
    """What the operator wrote: ``common_writes``, ``item_writes`` (index -> fields),
    ``added_items``, ``removed_items`` (sorted)."""
    snap: dict[str, Any] = {}
    if out.common_writes:
        snap["common_writes"] = dict(out.common_writes)
    if out.item_writes or out.column_writes:
        snap["item_writes"] = {str(i): row for i, row in out.item_write_map().items()}
    if out.added_count:
        snap["added_items"] = list(out.added_items or ())
    if out.removed:
        snap["removed_items"] = sorted(out.removed)
    return snap
