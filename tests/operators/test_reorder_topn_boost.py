from __future__ import annotations

from ._run import run


def test_boosts_size_items_and_keeps_the_rest_in_order() -> None:
    items = [{"id": str(10001 + i)} for i in range(8)]
    out = run(
        "reorder_topn_boost",
        {"size": 3},
        {"common_input": ["shuffle_salt"]},
        {"shuffle_salt": "beef"},
        items,
    )
    assert out.item_order == [3, 4, 5, 0, 1, 2, 6, 7]
