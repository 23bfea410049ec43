from __future__ import annotations

import pytest

from ._run import run

META = {"common_input": ["salt"], "item_input": ["id"]}


def test_deterministic_and_salt_dependent() -> None:
    items = [{"id": str(i)} for i in range(20)]
    a = run("reorder_shuffle_by_salt", meta=META, common={"salt": "x"}, items=items).item_order
    b = run("reorder_shuffle_by_salt", meta=META, common={"salt": "x"}, items=items).item_order
    c = run("reorder_shuffle_by_salt", meta=META, common={"salt": "y"}, items=items).item_order
    assert a == b and a != c and sorted(a or ()) == list(range(20))


def test_without_item_input_answers_no_items_and_names_the_field_with_items() -> None:
    # As Go: the field is read only when there are items.
    assert run("reorder_shuffle_by_salt", items=[]).item_order is None
    with pytest.raises(ValueError, match=r"\$metadata.item_input needs one field"):
        run("reorder_shuffle_by_salt", items=[{"id": "1"}])
