from __future__ import annotations

import sys

import pytest

from pineapple import RegistryError

from ._run import run


def test_emits_copies_of_items_and_common() -> None:
    items = [{"id": "a"}, {"id": "b"}]
    out = run("recall_static", {"items": items, "set_common": {"rid": "r1"}})
    assert out.added_items == items and out.added_items[0] is not items[0]
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


def test_templates_are_the_rows_with_room_for_the_engine_writes() -> None:
    from pineapple.operators.recall_static import _with_room

    row = {"a": 1.0, "b": "x", "c": None, "\x000": 2, "e": [1]}
    roomy = _with_room(row)
    assert roomy == row and list(roomy) == list(row)
    copy = roomy.copy()
    size = sys.getsizeof(copy)
    for f in ("_source", "f1", "f2", "f3", "f4"):
        copy[f] = 0.0
    assert sys.getsizeof(copy) == size  # written in place: the table did not grow
