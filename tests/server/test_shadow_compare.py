"""How two answers differ (``server/_shadow_compare.py``) and what a stage's summary and
thresholds make of it (``server/_shadow_summary.py``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server._shadow_compare import MAX_EXAMPLE_IDS, compare
from server._shadow_summary import ShadowSummary, ThresholdError, Thresholds


def _answer(ids: list[Any], common: Any = None, **fields: Any) -> tuple[int, bytes]:
    items = [{"id": i, **fields} for i in ids]
    return 200, orjson.dumps({"common": common or {}, "items": items})


def test_the_same_answer_is_same_even_with_other_bytes() -> None:
    assert compare(_answer([1, 2]), _answer([1, 2])).outcome == "same"
    spaced = 200, b'{"items": [{"id": 1}, {"id": 2}], "common": {}}'
    assert compare(_answer([1, 2]), spaced).outcome == "same"


def test_added_removed_moved_and_fields() -> None:
    diff = compare(_answer(["a", "b", "c", "d"]), _answer(["d", "b", "c", "e"]))
    assert (diff.outcome, diff.added, diff.removed) == ("changed", 1, 1)
    assert diff.ids == {"added": ["e"], "removed": ["a"], "moved": ["b", "c", "d"]}
    assert diff.moved == 3  # b, c, d: their ranks among the common items all changed
    reversed_ = compare(_answer(list(range(5))), _answer(list(range(4, -1, -1))))
    assert reversed_.moved == 4 and reversed_.ids["moved"] == ["0", "1", "3", "4"]
    scored = compare(_answer([1, 2], score=1), _answer([1, 2], score=2))
    assert (scored.fields, scored.moved, scored.ids["fields"]) == (2, 0, ["1", "2"])
    assert compare(_answer([1], {"n": 1}), _answer([1], {"n": 2})).common


def test_items_without_ids_match_by_their_json_and_examples_are_capped() -> None:
    plain = 200, orjson.dumps({"items": [{"x": 1}, {"x": 2}]})
    other = 200, orjson.dumps({"items": [{"x": 2}, {"x": 3}]})
    diff = compare(plain, other)
    assert (diff.added, diff.removed, diff.moved) == (1, 1, 0)  # {"x": 2} keeps its rank
    many = compare(_answer([]), _answer(list(range(20))))
    assert many.added == 20 and len(many.ids["added"]) == MAX_EXAMPLE_IDS


def test_failures() -> None:
    failed = 500, b'{"error": "boom"}'
    assert compare(_answer([1]), failed).outcome == "error"
    assert compare(failed, failed).outcome == "both_failed"
    assert compare(failed, _answer([1])).outcome == "changed"


def test_the_summary_counts_merges_and_reads_quantiles() -> None:
    one, two = ShadowSummary(max_examples=2), ShadowSummary(max_examples=2)
    for _ in range(3):
        one.add(compare(_answer([1, 2]), _answer([2, 1])), 0.001, 0.002)
    two.add(compare(_answer([1]), _answer([1])), 0.001, 0.001)
    two.add(compare(_answer([1]), (500, b"{}")), 0.001, 0.001)
    one.merge(two.counts())
    shown = one.to_dict()
    assert (shown["requests"], shown["changed"], shown["same"], shown["errors"]) == (5, 3, 1, 1)
    assert shown["items_moved"] == 6 and len(shown["examples"]) == 2
    assert shown["changed_ratio"] == 0.6 and shown["error_ratio"] == 0.2
    assert shown["live_p99_seconds"] < shown["candidate_p99_seconds"]
    assert shown["p99_growth"] > 0.5
    with pytest.raises(ValueError, match="shadow counts"):
        one.merge({"count": {}, "live_latency": [1]})


def test_thresholds_decide_once_min_requests_are_compared() -> None:
    summary = ShadowSummary(0)
    changed = compare(_answer([1, 2]), _answer([2, 1]))
    same = compare(_answer([1]), _answer([1]))
    rules = Thresholds.parse({"min_requests": "4", "max_changed_ratio": "0.5"})
    for diff in (changed, same, same):
        summary.add(diff, 0.001, 0.001)
        assert rules.verdict(summary) is None
    summary.add(same, 0.001, 0.001)
    assert rules.verdict(summary) == ("promote", "within every threshold after 4 requests")
    for _ in range(3):  # 4 of 7 changed
        summary.add(changed, 0.001, 0.001)
    decision, reason = rules.verdict(summary) or ("", "")
    assert decision == "abort" and "changed_ratio 0.571429 is above" in reason, reason
    assert Thresholds.parse({}).verdict(summary) is None  # no min_requests: by hand only


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"min_requests": "x"}, "min_requests must be a number"),
        ({"min_requests": "0"}, "min_requests must be at least 1"),
        ({"max_error_ratio": "-1"}, "max_error_ratio must be at least 0"),
        ({"max_p99_growth": "nan"}, "max_p99_growth must be finite"),
    ],
)
def test_a_bad_threshold_is_named(given: dict[str, str], named: str) -> None:
    with pytest.raises(ThresholdError, match=named):
        Thresholds.parse(given)


def test_max_p99_growth_aborts_a_slower_candidate() -> None:
    summary = ShadowSummary(0)
    same = compare(_answer([1]), _answer([1]))
    for _ in range(10):
        summary.add(same, 0.001, 0.002)  # twice as slow: p99 grows by about 100%
    assert Thresholds.parse({"min_requests": 10, "max_p99_growth": 2}).verdict(summary) == (
        "promote",
        "within every threshold after 10 requests",
    )
    decision, reason = Thresholds.parse({"min_requests": 10, "max_p99_growth": 0.5}).verdict(
        summary
    ) or ("", "")
    assert decision == "abort" and reason.startswith("p99_growth "), reason
