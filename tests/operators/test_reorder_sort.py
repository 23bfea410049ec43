from __future__ import annotations

import math
import random
from typing import Any

import pytest

from pineapple._native import compiled
from pineapple.engine import build_operator
from pineapple.engine._pieces import PIECE
from pineapple.operators._orders import float_order  # built by every install
from pineapple.operators.reorder_sort import ReorderSort

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


def _runs_of_numbers(rng: random.Random) -> list[Any]:
    """A few runs, each in one direction, of values with many ties (both zeros, ints
    equal to floats, infinities)."""
    values: list[Any] = []
    pool = [0.0, -0.0, 0, 1, 1.0, 2.5, -3.0, 2**53, float(2**53), -(2**53), math.inf, -math.inf]
    for _ in range(rng.randint(1, 12)):
        run = sorted(rng.choice([*pool, rng.random()]) for _ in range(rng.randint(0, 12)))
        values += reversed(run) if rng.random() < 0.5 else run
    if rng.random() < 0.2:
        rng.shuffle(values)
    return values


def test_the_kernel_orders_numbers_as_sorted_does() -> None:
    rng = random.Random(38)
    for _ in range(3000):
        values = _runs_of_numbers(rng)
        for descending in (True, False):
            expected = sorted(range(len(values)), key=values.__getitem__, reverse=descending)
            assert float_order(values, descending) == expected, (values, descending)


@pytest.mark.parametrize(
    "value",
    [float("nan"), True, 2**53 + 1, -(2**53) - 1, 2**70, "1", None, 1.5j],
    ids=repr,
)
def test_the_kernel_leaves_any_other_value_to_sorted(value: Any) -> None:
    # An int past 2**53 has no exact double: Python compares it exactly, sorted does.
    for at in (0, 1, 2):
        values: list[Any] = [1.0, 2.0]
        values.insert(at, value)
        assert float_order(values, True) is None
        assert float_order(values, False) is None


def test_the_kernel_at_the_bounds() -> None:
    assert float_order([], True) == []
    assert float_order([0.5], False) == [0]
    with pytest.raises(TypeError, match="values: list"):
        float_order((1.0, 2.0), True)  # type: ignore[arg-type]


def test_the_compiled_core_orders_with_the_kernel() -> None:
    op, _ = build_operator("reorder_sort", {}, {"item_input": ["s"]})
    assert isinstance(op, ReorderSort)
    assert (op.kernel is float_order) is compiled()  # pure Python: sorted, always


def test_the_operator_orders_two_recall_lists_as_sorted() -> None:
    # Two recall lists, each in score order, one after the other (the usual input).
    items = [{"s": float(500 - i)} for i in range(500)] + [{"s": 499.5 - i} for i in range(500)]
    keys = [row["s"] for row in items]
    for order in ("asc", "desc"):
        got = run("reorder_sort", {"order": order}, {"item_input": ["s"]}, items=items).item_order
        assert got == sorted(range(1000), key=keys.__getitem__, reverse=order == "desc")
