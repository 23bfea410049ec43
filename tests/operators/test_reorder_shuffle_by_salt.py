from __future__ import annotations

from ._run import run

META = {"common_input": ["salt"], "item_input": ["id"]}


def test_deterministic_and_salt_dependent() -> None:
    items = [{"id": str(i)} for i in range(20)]
    a = run("reorder_shuffle_by_salt", meta=META, common={"salt": "x"}, items=items).item_order
    b = run("reorder_shuffle_by_salt", meta=META, common={"salt": "x"}, items=items).item_order
    c = run("reorder_shuffle_by_salt", meta=META, common={"salt": "y"}, items=items).item_order
    assert a == b and a != c and sorted(a or ()) == list(range(20))
