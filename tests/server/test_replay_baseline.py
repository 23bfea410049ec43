"""A replay given the live snapshot as ``baseline`` counts only the candidate's own failures.

What a refreshed value's replay relies on (``server/_value_replay.py``, in one process
and in the supervisor's value trial): a request the candidate fails is answered by the
live snapshot too, and one it fails as well is ``failed_live_too``, not ``failed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pineapple import Context
from server._replay import replay
from server._request_sample import SampledRequest


@dataclass
class _Snap:
    """An engine (its name) and a context: what a replay answers with."""

    engine: Any
    context: Context = field(default_factory=Context)


def _responder(fails: dict[str, set[bytes]], asked: list[tuple[str, bytes]]) -> Any:
    """Answers 500 for the bodies ``fails`` names for an engine, else 200; logs each call."""

    def respond(engine: str, ctx: Context, body: bytes, *group: str) -> tuple[int, bytes]:
        asked.append((engine, body))
        if body in fails[engine]:
            return 500, b'{"error": "operator \\"lua\\" failed on ' + body + b'"}'
        return 200, b'{"items": []}'

    return respond


def test_failures_the_live_snapshot_has_too_are_not_the_candidates() -> None:
    requests = [SampledRequest(body) for body in (b"a", b"b", b"c", b"d")]
    fails = {"candidate": {b"b", b"c"}, "live": {b"c"}}  # b: the candidate's; c: both
    asked: list[tuple[str, bytes]] = []
    report = replay(
        _Snap("candidate"),
        _responder(fails, asked),
        requests,
        60.0,
        None,
        baseline=_Snap("live"),
    )
    assert (report.replayed, report.failed, report.failed_live_too) == (4, 1, 1)
    assert report.first_error == 'operator "lua" failed on b'
    assert report.first_operator == "lua"
    assert report.to_dict()["failed_live_too"] == 1
    # The live snapshot answers only what the candidate failed, right after it.
    assert asked == [
        ("candidate", b"a"),
        ("candidate", b"b"),
        ("live", b"b"),
        ("candidate", b"c"),
        ("live", b"c"),
        ("candidate", b"d"),
    ]


def test_without_a_baseline_every_failure_counts() -> None:
    requests = [SampledRequest(body) for body in (b"a", b"c")]
    asked: list[tuple[str, bytes]] = []
    fails = {"candidate": {b"c"}, "live": {b"c"}}
    report = replay(_Snap("candidate"), _responder(fails, asked), requests, 60.0, None)
    assert (report.replayed, report.failed, report.failed_live_too) == (2, 1, 0)
    assert [engine for engine, _ in asked] == ["candidate", "candidate"]
