"""Small config builders for engine tests."""

from __future__ import annotations

from typing import Any


def op(type_name: str, **fields: Any) -> dict[str, Any]:
    """An operator entry: params and engine keys as keywords, ``meta`` for ``$metadata``."""
    meta = fields.pop("meta", {})
    return {"type_name": type_name, "$metadata": meta, **fields}


def config(
    operators: dict[str, dict[str, Any]],
    pipeline: list[str] | None = None,
    contract: dict[str, list[str]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A unified config running ``pipeline`` (default: every operator in order)."""
    return {
        "pipeline_config": {"operators": operators, **extra.pop("pipeline_config", {})},
        "pipeline_group": {"main": {"pipeline": pipeline or list(operators)}},
        "flow_contract": contract or {},
        **extra,
    }
