"""Applying an operator's item order: a permutation, or a FrameError naming the bad index."""

from __future__ import annotations

import pytest

from pineapple.engine._frame import FrameError, _reorder

ITEMS = [{"id": 0}, {"id": 1}, {"id": 2}]


def test_a_permutation_reorders() -> None:
    assert [r["id"] for r in _reorder(list(ITEMS), [2, 0, 1])] == [2, 0, 1]
    assert _reorder([], []) == []


@pytest.mark.parametrize(
    ("order", "message"),
    [
        ([0, 1], "length 2 does not match item count 3"),
        ([0, 3, 1], "index 3 out of range [0, 3)"),
        ([0, -1, 1], "index -1 out of range [0, 3)"),
        ([0, 0, 1], "duplicate index 0"),
        ([1, 1, 5], "index 5 out of range"),  # range is checked before repeats
    ],
)
def test_a_bad_order_names_what_is_wrong(order: list[int], message: str) -> None:
    with pytest.raises(FrameError) as info:
        _reorder(list(ITEMS), order)
    assert message in str(info.value)
