"""The salted FNV-1a ranking (``pineapple.operators._salted_hash``), compiled and pure."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from pineapple._native import compiled
from pineapple.engine._pieces import PIECE
from pineapple.operators import _orders  # built by every install
from pineapple.operators._order_kernels import SALTED_ORDER
from pineapple.operators._salted_hash import (
    _break_ties,
    boosted_order,
    salt_text,
    salted_hash,
    salted_rank,
)

_DIGITS = re.compile(r"[0-9]+")


def test_the_hash_is_64_bit_fnv_1a() -> None:
    # The published FNV-1a 64-bit test vectors.
    assert salted_hash(b"") == 0xCBF29CE484222325
    assert salted_hash(b"a") == 0xAF63DC4C8601EC8C
    assert salted_hash(b"foobar") == 0x85944171F73967E8


def test_the_hash_equals_the_arithmetic_on_python_integers() -> None:
    rng = random.Random(38)
    for _ in range(500):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        h = 0xCBF29CE484222325
        for byte in data:
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        assert salted_hash(data) == h


def _reference(prefix: str, values: list[Any]) -> list[int]:
    """Sorted by (hash / 2**64, numeric id, index), on Python integers."""

    def number(text: str) -> int:
        return int(text) if _DIGITS.fullmatch(text) and int(text) < 2**64 else 0

    keys = []
    for i, v in enumerate(values):
        text = salt_text(v)
        keys.append((float(salted_hash((prefix + text).encode())) / 2.0**64, number(text), i))
    return [k[2] for k in sorted(keys)]


def test_the_rank_orders_by_fraction_then_number_then_index() -> None:
    rng = random.Random(7)
    pool: list[Any] = ["10001", 7, 2.5, None, True, "x", [1, "a"], {"k": 1}, "007", "", -3]
    for _ in range(200):
        values = [rng.choice(pool) for _ in range(rng.randrange(30))]
        prefix = rng.choice(["", "beef|", "100001|a|"])
        assert salted_rank(prefix, values) == _reference(prefix, values)


def test_more_values_than_a_piece_rank_as_one_piece() -> None:
    values: list[Any] = [i % 5000 for i in range(PIECE + 1000)]  # repeats tie
    assert salted_rank("s|", values) == _reference("s|", values)


def test_equal_fractions_go_by_number_then_index() -> None:
    # Two hashes one float apart are too rare to find by search: the tie pass alone.
    order = [2, 0, 1, 3]
    _break_ties(order, [0.5, 0.5, 0.1, 0.5], ["9", "x", "", "3"])
    assert order == [2, 1, 3, 0]  # 0.1; then 0.5 by number: "x" 0, "3" 3, "9" 9


def test_ints_hash_as_the_text_go_prints_for_them() -> None:
    # Ints below 10**6 in magnitude are hashed digit by digit from the number itself;
    # every other value through its text: both must rank as the text does.
    rng = random.Random(5)
    edges = [0, 1, -1, 9, 10, -10, 99, 100, 999_999, -999_999, 1_000_000, -1_000_000]
    values: list[Any] = edges + [rng.randrange(-1_200_000, 1_200_000) for _ in range(3000)]
    values += [True, False, 2.0, 10**20]
    for prefix in ("", "s|", "100001|a|"):
        assert salted_rank(prefix, values) == _reference(prefix, values)


def _boosted(prefix: str, values: list[Any], size: int) -> list[int]:
    head = _reference(prefix, values)[: max(0, min(size, len(values)))]
    return head + [i for i in range(len(values)) if i not in head]


def _distinct_keys(rng: random.Random) -> list[Any]:
    """Strs (ASCII, non-ASCII, empty, digits) and ints below 10**6, none repeated."""
    pool: set[Any] = {"", "été", "日本", "007", "10001", 0, -1, 999_999}
    pool |= {rng.randrange(-999_999, 1_000_000) for _ in range(rng.randrange(60))}
    pool |= {str(rng.randrange(10**12)) for _ in range(rng.randrange(60))}
    values = list(pool)
    rng.shuffle(values)
    return values


def test_the_kernel_ranks_strs_and_small_ints_as_the_reference() -> None:
    rng = random.Random(38)
    for _ in range(300):
        values = _distinct_keys(rng)
        prefix = rng.choice(["", "beef|", "100001|a|", "é|"])
        state = salted_hash(prefix.encode())
        assert _orders.salted_order(state, values, -1) == _reference(prefix, values)
        size = rng.randrange(len(values) + 2)
        assert _orders.salted_order(state, values, size) == _boosted(prefix, values, size)


@pytest.mark.parametrize(
    "odd", [2.5, True, None, 10**6, -(10**6), 2**70, [1], {"k": 1}, "\ud800"], ids=repr
)
def test_the_kernel_leaves_other_values_to_python(odd: Any) -> None:
    values: list[Any] = ["x", 5, "10001", odd]
    for head in (-1, 0, 2, 4):
        assert _orders.salted_order(salted_hash(b"s|"), values, head) is None


def test_repeated_values_rank_as_the_reference_or_are_left_to_python() -> None:
    # A repeat has its first's rank: the kernel leaves the whole order to Python (which
    # orders equal ranks by number, then index); a head is answered when no repeat
    # ties one of its items. (Two distinct values one float apart, the other kind of
    # equal ranks, are too rare to find by search; the same check catches them.)
    rng = random.Random(3)
    answered = 0
    for _ in range(100):
        values = _distinct_keys(rng)
        values += rng.sample(values, rng.randrange(1, 4))
        rng.shuffle(values)
        state = salted_hash(b"s|")
        assert _orders.salted_order(state, values, -1) is None
        for head in range(0, 70, 3):
            got = _orders.salted_order(state, values, head)
            if got is not None:
                answered += 1
                assert got == _boosted("s|", values, head)
    assert answered > 100


def test_boosted_order_is_the_rank_head_then_the_rest_in_order() -> None:
    rng = random.Random(11)
    pool: list[Any] = ["10001", 7, 2.5, None, True, "x", [1, "a"], "007", "", -3, 10**7]
    for _ in range(200):
        values = rng.choice([_distinct_keys(rng), [rng.choice(pool) for _ in range(30)]])
        size = rng.randrange(-2, len(values) + 3)
        assert boosted_order("s|", values, size) == _boosted("s|", values, size)


def test_the_compiled_core_ranks_with_the_kernel() -> None:
    assert (SALTED_ORDER is _orders.salted_order) is compiled()  # pure Python: no kernel
