"""What ``pineapple admin stage|promote|abort|candidate`` print for people
(``server/cli/_admin_view.py``): one line an answer."""

from __future__ import annotations

from server.cli._admin_view import candidate_line, stage_line

SUMMARY = {
    "requests": 20,
    "changed": 20,
    "errors": 0,
    "dropped": 1,
    "changed_ratio": 1.0,
    "live_p99_seconds": 0.0002,
    "candidate_p99_seconds": 0.0003,
}


def test_stage_promote_and_abort_lines() -> None:
    staged = {"result": "staged", "candidate": {"revision": "abc", "share": 0.1}}
    assert stage_line(200, staged) == "config: staged abc (share 0.1)"
    ended = {"result": "aborted", "revision": "abc", "by": "admin", "reason": "aborted by an admin"}
    assert stage_line(200, ended) == "config: aborted abc (admin: aborted by an admin)"
    refused = stage_line(409, {"error": "config abc is staged: promote or abort it first"})
    assert refused == "config: refused (HTTP 409): config abc is staged: promote or abort it first"
    failed = stage_line(422, {"result": "error", "step": "engine", "error": "bad order"})
    assert failed.startswith("config: error at step engine (HTTP 422)")


def test_a_staged_refresh_names_its_resource() -> None:
    staged = {"result": "staged", "candidate": {"revision": "abc", "resource": "feed", "share": 1}}
    assert stage_line(200, staged) == "resource feed: staged a refresh (share 1)"
    ended = {"result": "promoted", "resource": "feed", "by": "thresholds", "reason": "ok"}
    assert stage_line(200, ended) == "resource feed: refresh promoted (thresholds: ok)"
    view = {"staged": {"revision": "abc", "resource": "feed", "share": 0.5, "summary": SUMMARY}}
    assert candidate_line(200, view).startswith("candidate refresh of feed (share 0.5): 20 ")
    last = {"resource": "feed", "decision": "abort", "by": "admin", "reason": "x"}
    assert candidate_line(404, {"staged": None, "last_decision": last}) == (
        "candidate: none staged; refresh of feed was aborted (admin: x)"
    )


def test_candidate_lines() -> None:
    staged = {"staged": {"revision": "abc", "share": 0.5, "summary": SUMMARY}}
    assert candidate_line(200, staged) == (
        "candidate abc (share 0.5): 20 compared, 20 changed, 0 errors, 1 dropped; "
        "changed_ratio 1.0, p99 0.0002s live vs 0.0003s"
    )
    decided = {
        "staged": None,
        "last_decision": {"revision": "abc", "decision": "promote", "by": "thresholds",
                          "reason": "within every threshold after 20 requests"},
    }  # fmt: skip
    assert candidate_line(404, decided) == (
        "candidate: none staged; abc was promoted (thresholds: within every threshold after "
        "20 requests)"
    )
    assert candidate_line(404, {"staged": None, "last_decision": None}) == "candidate: none staged"
