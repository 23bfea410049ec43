"""The top-k trap: a paging recall that feeds a sort and a truncation without ordering itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsl import Flow, advice
from dsl.generated.resources import FeedDataResource
from pineapple.cli import main

FLOW = """
from dsl import Flow
from dsl.generated.resources import FeedDataResource

flow = Flow("top", common_input=["category"], item_output=["id", "score"])
flow.resource("feed", FeedDataResource(sqlite_path="feed.db", index_columns=["category"]))
flow.recall_feed_data(
    name="recall",
    resource_name="feed",
    match={{"category": "category"}},
    common_input=["category"],
    item_output=["id", "score"],{order}
)
flow.reorder_sort(name="sort", order="desc", item_input=["score"])
flow.filter_truncate(name="top", top_n=20)
"""


def _flow(**recall: object) -> Flow:
    flow = Flow("top", common_input=["category"], item_output=["id", "score"])
    flow.resource("feed", FeedDataResource(sqlite_path="feed.db", index_columns=["category"]))
    flow.recall_feed_data(
        name="recall",
        resource_name="feed",
        match={"category": "category"},
        common_input=["category"],
        item_output=["id", "score"],
        **recall,  # type: ignore[arg-type]
    )
    flow.reorder_sort(name="sort", order="desc", item_input=["score"])
    flow.filter_truncate(name="top", top_n=20)
    return flow


def test_a_recall_in_load_order_before_sort_and_truncate_is_warned() -> None:
    (warning,) = advice(_flow())
    assert warning.startswith(
        "operator 'recall' (recall_feed_data) returns one page of at most 100 rows in load "
        "order, then 'sort' sorts and 'top' truncates them"
    )
    assert "order_by=" in warning and "(defined at: tests/dsl/test_advice.py:" in warning
    assert "at most 500 rows" in advice(_flow(default_size=500))[0]


def test_a_recall_that_orders_itself_is_not_warned() -> None:
    assert advice(_flow(order_by="score", descending=True)) == []


def test_without_a_truncation_after_the_sort_there_is_no_trap() -> None:
    flow = _flow()
    flow._children.pop()  # the filter_truncate
    assert advice(flow) == []


@pytest.mark.parametrize(("order", "warned"), [("", True), ('\n    order_by="score",', False)])
def test_compile_prints_the_warning_and_still_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: str, warned: bool
) -> None:
    source = tmp_path / "flow.py"
    source.write_text(FLOW.format(order=order))
    out = tmp_path / "flow.json"
    assert main(["compile", str(source), "-o", str(out)]) == 0
    assert out.is_file()
    err = capsys.readouterr().err
    assert ("pineapple compile: warning: operator 'recall' (recall_feed_data)" in err) is warned
