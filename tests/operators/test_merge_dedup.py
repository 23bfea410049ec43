from __future__ import annotations

from ._run import run


def test_keeps_first_by_type_aware_key() -> None:
    items = [
        {"k": 1},
        {"k": 1.0},
        {"k": "1"},
        {"k": True},
        {"k": -0.0},
        {"k": 0},
        {"k": None},
        {},
        {"k": [1]},
        {"k": [1.0]},
        {"k": False},
    ]
    out = run("merge_dedup", meta={"item_input": ["k"]}, items=items)
    assert out.removed == {1, 5, 7, 9}
