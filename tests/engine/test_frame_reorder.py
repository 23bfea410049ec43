"""Applying an operator's item order: a permutation, or a FrameError naming the bad index."""

from __future__ import annotations

import pytest

from pineapple.engine._columns import Frame
from pineapple.engine._frame import FrameError, _checked_order

ITEMS = [{"id": 0}, {"id": 1}, {"id": 2}]


def test_a_permutation_reorders() -> None:
    frame = Frame.of_rows(list(ITEMS))
    frame.keep(_checked_order([2, 0, 1], 3))
    assert frame.column("id") == [2, 0, 1]
    assert _checked_order([], 0) == []


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
        _checked_order(order, len(ITEMS))
    assert message in str(info.value)
