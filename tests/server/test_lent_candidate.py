"""``LentCandidate``: a staged refresh's value lent beside the serving snapshot, closed once
after its last shadowed request (or handed to the Manager by a promote)."""

from __future__ import annotations

from typing import Any

from pineapple import resource
from pineapple.resource.lowlevel import flush_closes
from server._resource_stage import LentCandidate, hold
from server.lowlevel import ConfigInfo, Snapshot


class _Engine:
    blocking = False

    def execute(self, ctx: object, request: dict[str, object]) -> dict[str, object]:
        return request

    def close(self) -> None:
        pass


class _Value(dict[str, Any]):
    def __init__(self, tag: str) -> None:
        super().__init__(tag=tag)
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


def _serving(*values: _Value) -> tuple[Snapshot, resource.Manager]:
    script = iter(values)
    manager = resource.Manager(jitter=0)
    manager.register("r", lambda: next(script), interval=-1)
    manager.start()
    info = ConfigInfo("x.json", 1, None, "1" * 64, 2, 0.0)
    return Snapshot(_Engine(), manager, info, 1), manager


def _staged(snap: Snapshot, manager: resource.Manager) -> LentCandidate:
    pin = hold("r", 0.0)
    assert snap.acquire()  # the candidate's reference of the serving snapshot
    return LentCandidate(snap, "r", manager.fetch_candidate("r", pin), pin)


def test_an_abort_closes_the_value_once_after_the_last_shadowed_request() -> None:
    live, new = _Value("live"), _Value("new")
    snap, manager = _serving(live, new)
    candidate = _staged(snap, manager)
    refs = snap.refs
    assert candidate.acquire()  # a shadowed request in flight
    with resource.borrow(candidate.context, "r", "op") as value:
        assert value is new  # lent in place of the live one
    assert candidate.abort("aborted by an admin", 0.05) is False  # still borrowed
    flush_closes(5)
    assert new.closes == 0 and not candidate.wait_closed(0)  # the request still reads it
    candidate.release()  # the request ends: the candidate closes
    assert candidate.wait_closed(5)
    flush_closes(5)
    assert new.closes == 1 and live.closes == 0
    assert snap.refs == refs - 1  # its reference of the serving snapshot released
    candidate.retire()  # a second retire is a no-op
    flush_closes(5)
    assert new.closes == 1
    snap.retire()
    assert snap.wait_closed(5)


def test_a_promote_hands_the_value_to_the_manager_unclosed() -> None:
    live, new = _Value("live"), _Value("new")
    snap, manager = _serving(live, new)
    candidate = _staged(snap, manager)
    assert candidate.promote(5) == 2
    flush_closes(5)
    assert new.closes == 0 and live.closes == 1
    handle = manager.get("r")
    assert handle is not None and handle.value is new
    handle.release()
    snap.retire()
    assert snap.wait_closed(5)
    flush_closes(5)
    assert new.closes == 1
