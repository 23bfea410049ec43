from __future__ import annotations

import pytest

from pineapple import RegistryError

from ._run import run


def test_all_directions() -> None:
    items = [{"x": 1}, {"x": 2}]
    out = run(
        "transform_copy",
        {"direction": "common_to_common"},
        {"common_input": ["a"], "common_output": ["b"]},
        {"a": 5},
    )
    assert out.common_writes == {"b": 5}
    out = run(
        "transform_copy",
        {"direction": "common_to_item"},
        {"common_input": ["a"], "item_output": ["y"]},
        {"a": 5},
        items,
    )
    assert out.item_write_map() == {0: {"y": 5}, 1: {"y": 5}}
    out = run(
        "transform_copy",
        {"direction": "item_to_item"},
        {"item_input": ["x"], "item_output": ["y"]},
        items=items,
    )
    assert out.item_write_map() == {0: {"y": 1}, 1: {"y": 2}}
    out = run(
        "transform_copy",
        {"direction": "item_to_common"},
        {"item_input": ["x"], "common_output": ["xs"]},
        items=items,
    )
    assert out.common_writes == {"xs": [1, 2]}


def test_unsupported_direction() -> None:
    with pytest.raises(RegistryError, match='unsupported direction "sideways"'):
        run("transform_copy", {"direction": "sideways"})
