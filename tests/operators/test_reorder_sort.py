from __future__ import annotations

import pytest

from pineapple.engine._pieces import PIECE

from ._run import run


def test_stable_desc_and_asc() -> None:
    items = [{"s": 1}, {"s": 3}, {"s": 1.0}, {"s": 2}]
    assert run("reorder_sort", meta={"item_input": ["s"]}, items=items).item_order == [1, 3, 0, 2]
    assert run("reorder_sort", {"order": "asc"}, {"item_input": ["s"]}, items=items).item_order == [
        0,
        2,
        3,
        1,
    ]


def test_rejects_bool() -> None:
    with pytest.raises(TypeError, match="cannot convert bool to float64"):
        run("reorder_sort", meta={"item_input": ["s"]}, items=[{"s": 1}, {"s": False}])


def test_without_item_input_answers_no_items_and_names_the_field_with_items() -> None:
    # As Go: the field is read only when there are items.
    assert run("reorder_sort", items=[]).item_order is None
    with pytest.raises(ValueError, match=r"reorder_sort: \$metadata.item_input needs one field"):
        run("reorder_sort", items=[{"s": 1}])


@pytest.mark.parametrize("n", [PIECE, PIECE + 1, 3 * PIECE + 7])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_one_piece_and_many_sort_alike(n: int, order: str) -> None:
    # Few distinct keys: ties everywhere, kept in input order either way.
    items = [{"s": (i * 7919) % 13 + (0.5 if i % 3 else 0)} for i in range(n)]
    got = run("reorder_sort", {"order": order}, {"item_input": ["s"]}, items=items).item_order
    keys = [row["s"] for row in items]
    assert got == sorted(range(n), key=keys.__getitem__, reverse=order == "desc")
