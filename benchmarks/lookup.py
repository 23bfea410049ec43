"""Target 7: ``transform_resource_lookup`` over 1,000 items against a dict comprehension."""

from __future__ import annotations

from typing import Any

import pineapple.operators  # noqa: F401  (registers the built-in operators)
from pineapple import Context, builtins, resource
from pineapple.engine import OperatorInput, OperatorOutput, build_operator

from ._measure import Result, interleaved

__all__ = ["lookup_case", "resource_lookup"]

ITEMS = 1000


def lookup_case(items: int = ITEMS) -> tuple[Any, Any]:
    """(operator run, floor run): the same lookups, half of them misses, default 0.0."""
    table = {f"item_{n}": n / 1000 for n in range(0, 2 * items, 2)}
    rows = [{"item_id": f"item_{n}", "category": "news"} for n in range(items)]
    op, _ = build_operator(
        "transform_resource_lookup",
        {
            "resource_name": "item_ctr",
            "lookup_key": "item_id",
            "output_field": "ctr",
            "default_value": 0.0,
        },
        {"item_input": ["item_id"], "item_output": ["ctr"]},
        registry=builtins.operator_registry(),
    )
    ctx = resource.with_resources(Context(), resource.Static({"item_ctr": table}))
    # The items as the engine holds them: columns, made once when a request is admitted
    # (the operator reads them; it never changes its input).
    inp = OperatorInput({}, rows)

    def operator() -> OperatorOutput:
        out = OperatorOutput()
        op.execute(ctx, inp, out)
        return out

    def floor() -> list[Any]:
        return [table.get(item["item_id"], 0.0) for item in rows]

    want = floor()
    got = operator().column_writes or [("ctr", [])]
    if got[0][1] != want:
        raise AssertionError("the operator and the comprehension disagree")
    return operator, floor


def resource_lookup() -> list[Result]:
    """Median of interleaved rounds, operator vs ``[table.get(item[key], d) for item in items]``."""
    operator, floor = lookup_case()
    t = interleaved({"operator": operator, "floor": floor}, rounds=21, number=300)
    return [
        Result(
            7,
            f"transform_resource_lookup over {ITEMS} items / dict comprehension",
            t["operator"] / t["floor"],
            2.0,
            f"{t['operator'] * 1e6:.1f} us vs {t['floor'] * 1e6:.1f} us "
            "(operator API + resource.Static borrow)",
        )
    ]
