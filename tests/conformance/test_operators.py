"""``operators/`` fixtures: one operator, built from params and metadata, run on an input."""

from __future__ import annotations

from typing import Any

import pytest

from pineapple import Context
from pineapple.engine import OperatorInput, OperatorOutput, build_operator

from ._fixtures import load, marks_for, missing_dir_param, same


def _cases() -> list[Any]:
    params = []
    for fixture_id, data in load("operators"):
        for case in data["cases"]:
            cid = f"{fixture_id}::{case['name']}"
            params.append(pytest.param(data["operator"], case, id=cid, marks=marks_for(cid, data)))
    return params or [missing_dir_param(2)]


def _check(case: dict[str, Any], out: OperatorOutput) -> list[str]:
    exp = case["expected"]
    errors: list[str] = []
    if exp.get("warnings") is not None:
        if out.warning is None and exp["warnings"]:
            errors.append("expected a warning, got none")
        warning = out.warning or ""
        for sub in exp["warnings"] if out.warning is not None else ():
            if sub not in warning:
                errors.append(f"warning {out.warning!r} lacks {sub!r}")
    if exp.get("removed_indices") is not None:
        got = sorted(out.removed or ())
        if got != sorted(exp["removed_indices"]):
            errors.append(f"removed {got}, expected {sorted(exp['removed_indices'])}")
    if exp.get("added_items") is not None:
        added = out.added_items or []
        if len(added) != len(exp["added_items"]):
            errors.append(f"added {len(added)} items, expected {len(exp['added_items'])}")
        else:
            for i, want in enumerate(exp["added_items"]):
                for key, value in want.items():
                    if not same(value, added[i].get(key)):
                        errors.append(f"added_items[{i}].{key} = {added[i].get(key)!r}")
    if exp.get("common") is not None:
        writes = out.common_writes or {}
        for key, value in exp["common"].items():
            if key not in writes or not same(value, writes[key]):
                errors.append(f"common[{key}] = {writes.get(key)!r}, expected {value!r}")
    if exp.get("item_order") is not None and out.item_order != exp["item_order"]:
        errors.append(f"item_order {out.item_order}, expected {exp['item_order']}")
    if exp.get("items") is not None:
        writes_by_index = out.item_write_map()
        for i, want in enumerate(exp["items"]):
            row = writes_by_index.get(i, {})
            for key, value in want.items():
                if key not in row or not same(value, row[key]):
                    errors.append(f"items[{i}].{key} = {row.get(key)!r}, expected {value!r}")
    return errors


@pytest.mark.parametrize(("type_name", "case"), _cases())
def test_operator_fixture(type_name: str, case: dict[str, Any]) -> None:
    op, _ = build_operator(type_name, case.get("params") or {}, case.get("metadata") or {})
    try:
        out = OperatorOutput()
        inp = case.get("input") or {}
        op.execute(Context(), OperatorInput(inp.get("common") or {}, inp.get("items") or []), out)
    finally:
        op.close()
    assert _check(case, out) == []
