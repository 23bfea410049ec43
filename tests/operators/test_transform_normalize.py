from __future__ import annotations

import pytest

from pineapple import RegistryError

from ._run import run

META = {"item_input": ["s"], "item_output": ["n"]}


def test_min_max() -> None:
    out = run("transform_normalize", meta=META, items=[{"s": 10}, {"s": 20.0}, {"s": 15}])
    assert out.item_write_map() == {0: {"n": 0.0}, 1: {"n": 1.0}, 2: {"n": 0.5}}


def test_equal_values_give_zeros() -> None:
    out = run("transform_normalize", meta=META, items=[{"s": 3}, {"s": 3}])
    assert out.item_write_map() == {0: {"n": 0.0}, 1: {"n": 0.0}}


def test_non_numeric_names_item_field_and_type() -> None:
    with pytest.raises(
        TypeError, match=r"transform_normalize: item\[1\]\.s: cannot convert bool to float64"
    ):
        run("transform_normalize", meta=META, items=[{"s": 1}, {"s": True}])


def test_unknown_method() -> None:
    with pytest.raises(RegistryError, match="unsupported method"):
        run("transform_normalize", {"method": "z"}, META)
