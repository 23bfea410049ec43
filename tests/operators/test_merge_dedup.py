from __future__ import annotations

import pytest

from pineapple import RegistryError

from ._run import run


def test_keeps_first_by_type_aware_key() -> None:
    items = [
        {"k": 1},
        {"k": 1.0},
        {"k": "1"},
        {"k": True},
        {"k": -0.0},
        {"k": 0},
        {"k": None},
        {},
        {"k": [1]},
        {"k": [1.0]},
        {"k": False},
    ]
    out = run("merge_dedup", meta={"item_input": ["k"]}, items=items)
    assert out.removed == {1, 5, 7, 9}


def test_without_item_input_is_refused_at_build() -> None:
    # Go fails every request without the field, even with no items: refuse the config.
    with pytest.raises(RegistryError, match=r"merge_dedup: \$metadata.item_input needs one field"):
        run("merge_dedup", items=[])
