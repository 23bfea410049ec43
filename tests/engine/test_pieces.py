"""``pineapple.engine._pieces``: the one-call results, in pieces of bounded size."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pineapple.engine import _pieces
from pineapple.engine._pieces import batches, pieces, release, stable_order


@pytest.mark.parametrize("seed", range(6))
def test_stable_order_is_sorted_with_ties_in_input_order(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(60):
        n = rnd.randint(0, 400)
        spread = rnd.choice([1, 3, 50, 10**9])
        keys: list[Any] = [rnd.randint(0, spread) for _ in range(n)]
        if seed % 2:
            keys = [k / 7 if rnd.random() < 0.5 else k for k in keys]  # ints and floats mixed
        if seed == 4:
            keys.sort()  # long equal runs, already ordered
        size = rnd.randint(1, 40)
        for reverse in (False, True):
            expected = sorted(range(n), key=keys.__getitem__, reverse=reverse)
            assert stable_order(keys, reverse=reverse, size=size) == expected


def test_stable_order_sorts_at_most_size_items_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    largest = 0

    def counting_sorted(values: Any, **kwargs: Any) -> list[Any]:
        nonlocal largest
        values = list(values)
        largest = max(largest, len(values))
        return sorted(values, **kwargs)

    monkeypatch.setattr(_pieces, "sorted", counting_sorted, raising=False)
    keys = [random.Random(1).random() for _ in range(5000)]
    for reverse in (False, True):
        assert stable_order(keys, reverse=reverse, size=64) == sorted(
            range(5000), key=keys.__getitem__, reverse=reverse
        )
    assert 0 < largest <= 64


def test_pieces_batches_and_release() -> None:
    assert [list(p) for p in pieces(list(range(7)), 3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(pieces([], 3)) == []
    assert list(batches(iter(range(5)), 2)) == [[0, 1], [2, 3], [4]]
    items = list(range(10))
    release(items, 3)
    assert items == []
