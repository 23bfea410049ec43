"""Applying an operator's removals: a range, a list or a set of indices drop the same items."""

from __future__ import annotations

import pytest

from pineapple.engine._columns import Frame
from pineapple.engine._frame import FrameError, _remove
from pineapple.engine._io import OperatorOutput

N = 8


def _frame() -> Frame:
    return Frame.of_rows([{"id": i, "s": str(i)} for i in range(N)])


@pytest.mark.parametrize(
    "indices",
    [
        range(5, N),  # a tail: truncation
        range(N - 1, 2, -1),  # a tail given backwards
        range(2, 5),
        range(0, N, 3),
        [7, 1, 1, 4],  # unsorted, a repeat
        [5, 6, 7],
        [0],
    ],
)
def test_a_range_a_list_and_a_set_remove_the_same_items(indices: range | list[int]) -> None:
    want = [i for i in range(N) if i not in set(indices)]
    for removal in (indices, list(indices), set(indices)):
        frame = _frame()
        _remove(frame, removal)
        assert frame.column("id") == want
        assert frame.column("s") == [str(i) for i in want]
        assert frame.rows() == [{"id": i, "s": str(i)} for i in want]


@pytest.mark.parametrize(
    ("indices", "bad"), [(range(6, N + 1), N), (range(-1, 3), -1), ([3, N, -2], -2)]
)
def test_an_index_out_of_range_is_named(indices: range | list[int], bad: int) -> None:
    for removal in (indices, list(indices), set(indices)):
        with pytest.raises(FrameError, match=rf"RemoveItem index {bad} out of range \[0, {N}\)"):
            _remove(_frame(), removal)


def test_remove_items_keeps_a_range_or_a_copy_of_a_list_until_a_set_is_asked_for() -> None:
    out = OperatorOutput()
    out.remove_items(range(2, 5))
    assert out.removal == range(2, 5)
    assert out.removed == {2, 3, 4}
    drop = [1, 0]
    out = OperatorOutput()
    out.remove_items(drop)
    drop.append(7)  # the caller's list is not the output's
    assert out.removal == [1, 0]
    out.remove_item(5)
    out.remove_items(range(6, 6))
    assert out.removed == {0, 1, 5}
    assert OperatorOutput().removed is None
    empty = OperatorOutput()
    empty.remove_items(range(3, 3))
    assert empty.removed == set()
    assert empty.used()[3] is False


def test_a_removal_after_an_empty_one_is_kept_as_given() -> None:
    # filter_paginate's first page: nothing before it, then the tail (a truncation).
    out = OperatorOutput()
    out.remove_items(range(0, 0))
    out.remove_items(range(10, 3000))
    assert out.removal == range(10, 3000)
    out = OperatorOutput()
    out.remove_items([])
    out.remove_items([4, 2])
    assert out.removal == [4, 2]
    out.remove_items(range(0, 0))  # nothing more: what was removed stays
    assert out.removed == {2, 4}
