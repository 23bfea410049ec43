from __future__ import annotations

import sys

import pytest

from pineapple import RegistryError

from ._run import run


def test_emits_copies_of_items_and_common() -> None:
    items = [{"id": "a"}, {"id": "b"}]
    out = run("recall_static", {"items": items, "set_common": {"rid": "r1"}})
    # The step's name as the engine writes it (run() names the step by its type).
    assert out.added_items == [{**row, "_source": "recall_static"} for row in items]
    assert out.added_items[0] is not items[0]
    assert items == [{"id": "a"}, {"id": "b"}]
    assert out.common_writes == {"rid": "r1"}
    assert out.finite_added is True


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("x", "'items' must be a JSON array, got string"),
        ([1], "items[0] must be an object, got float64"),
    ],
)
def test_bad_items(items: object, message: str) -> None:
    with pytest.raises(RegistryError) as info:
        run("recall_static", {"items": items})
    assert message in str(info.value)


@pytest.mark.parametrize("fields", [0, 3, 4, 5, 9, 10, 16, 30])
def test_templates_are_the_rows_with_room_for_the_engine_writes(fields: int) -> None:
    from pineapple.operators.recall_static import ROOM, _with_room

    row: dict[str, object] = {f"f{i}": float(i) for i in range(fields)}
    row["\x000"] = "a placeholder's name"  # a row's own key is never taken for one
    roomy = _with_room(row, "r")
    assert roomy == {**row, "_source": "r"} and list(roomy) == [*row, "_source"]
    copy = roomy.copy()
    size = sys.getsizeof(copy)
    for f in range(ROOM):
        copy[f"new{f}"] = 0.0
    assert sys.getsizeof(copy) == size  # written in place: the table did not grow
    copy["one more"] = 0.0
    if fields == 4:  # the smallest table that has the room: the next field grows it
        assert sys.getsizeof(copy) > size


def test_a_row_with_its_own_source_keeps_it_in_place() -> None:
    from pineapple.operators.recall_static import _with_room

    roomy = _with_room({"_source": "x", "id": 1}, "r")
    assert list(roomy.items()) == [("_source", "r"), ("id", 1)]
