from __future__ import annotations

from ._run import run


def test_compares_go_text() -> None:
    items = [{"f": 1000000}, {"f": "1e+06"}, {"f": 1e6}, {"f": 2}, {}]
    out = run("filter_condition", {"value": 1000000.0}, {"item_input": ["f"]}, items=items)
    assert out.removed == {0, 1, 2}


def test_null_value_removes_missing_and_null() -> None:
    out = run(
        "filter_condition",
        {"value": None},
        {"item_input": ["f"]},
        items=[{"f": 0}, {}, {"f": None}],
    )
    assert out.removed == {1, 2}
