"""The supervisor's control channel: one bounded JSON line each way over a unix socket."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pineapple import PineappleError, resource
from pineapple._error_text import MAX_ERROR_BYTES
from server._decisions import Refused
from server.workers import _control
from server.workers._control import (
    CONTROL_MAX_BYTES,
    CONTROL_MAX_HANDLERS,
    ControlError,
    ControlServer,
    call,
    refusal_of,
)


class Odd(PineappleError):
    pass


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A directory whose socket path is longer than a unix socket address may be."""
    path = tmp_path / ("d" * 60) / ("e" * 60)
    path.mkdir(parents=True)
    return path


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _serve(path: Path, handle: Any) -> ControlServer:
    server = ControlServer(path / _control.CONTROL_SOCKET, handle)
    server.start()
    return server


def test_round_trip_and_errors_by_status_over_a_long_path(deep: Path) -> None:
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "fail":
            raise Refused(409, "resource 'feed' refused", {"name": "feed"})
        if request["op"] == "pinned":
            raise resource.PinnedError("feed", "by an admin")
        if request["op"] == "odd":
            raise Odd("odd")
        if request["op"] == "crash":
            raise RuntimeError("secret=hunter2")
        return {"echo": request["op"]}

    server = _serve(deep, handle)
    try:
        target = deep / _control.CONTROL_SOCKET
        assert len(str(target)) > 108
        assert call(target, {"op": "hi"}, 5) == {"echo": "hi"}
        assert refusal_of(call(target, {"op": "hi"}, 5)) is None
        failed = call(target, {"op": "fail"}, 5)
        assert failed == {
            "error": {
                "status": 409,
                "message": "resource 'feed' refused",
                "resource": {"name": "feed"},
            }
        }
        refused = refusal_of(failed)
        assert refused is not None
        assert (refused.status, str(refused), refused.resource) == (
            409,
            "resource 'feed' refused",
            {"name": "feed"},
        )
        assert call(target, {"op": "pinned"}, 5)["error"]["status"] == 409  # by class
        assert call(target, {"op": "odd"}, 5)["error"]["status"] == 502  # not in the table
        crashed = call(target, {"op": "crash"}, 5)
        assert crashed["error"]["status"] == 502
        assert "hunter2" not in str(crashed)
    finally:
        server.stop()
    with pytest.raises(ControlError, match="supervisor gone"):
        call(target, {"op": "hi"}, 5)


def test_oversized_and_silent_requests_are_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_control, "CONTROL_READ_SECONDS", 0.2)
    server = _serve(tmp_path, lambda request: {"ok": True})
    try:
        big = call(tmp_path / _control.CONTROL_SOCKET, {"op": "x" * CONTROL_MAX_BYTES}, 5)
        assert big["error"]["status"] == 502
        assert "over" in big["error"]["message"]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
            silent.settimeout(5)
            silent.connect(str(tmp_path / _control.CONTROL_SOCKET))
            reply = silent.recv(4096)  # never sends: answered within the read bound
        assert b"no complete message" in reply
    finally:
        server.stop()


def test_a_reply_that_cannot_fit_is_answered_with_a_bounded_error(tmp_path: Path) -> None:
    def handle(request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "huge":
            return {"statuses": ["s" * 1000] * 200}  # ~200 KB: over one message
        if request["op"] == "long refusal":
            raise Refused(409, "r" * 200_000, {"name": "feed"})
        return {"ok": True}

    server = _serve(tmp_path, handle)
    target = tmp_path / _control.CONTROL_SOCKET
    try:
        huge = call(target, {"op": "huge"}, 5)
        refused = refusal_of(huge)
        assert refused is not None and refused.status == 502
        assert f"over the control channel's {CONTROL_MAX_BYTES}" in str(refused)
        long = refusal_of(call(target, {"op": "long refusal"}, 5))
        assert long is not None and long.status == 409
        assert len(str(long).encode()) <= MAX_ERROR_BYTES and "more bytes)" in str(long)
        assert call(target, {"op": "next"}, 5) == {"ok": True}  # the channel still serves
    finally:
        server.stop()


def test_a_caller_waits_no_longer_than_its_timeout(tmp_path: Path, gate: threading.Event) -> None:
    server = _serve(tmp_path, lambda request: {"ok": gate.wait(10)})
    try:
        with pytest.raises(ControlError, match="within the time allowed"):
            call(tmp_path / _control.CONTROL_SOCKET, {"op": "slow"}, 0.3)
    finally:
        gate.set()
        server.stop()


def test_requests_past_the_handler_limit_are_answered_busy(
    tmp_path: Path, gate: threading.Event
) -> None:
    entered = threading.Semaphore(0)

    def handle(request: dict[str, Any]) -> dict[str, Any]:
        entered.release()
        gate.wait(10)
        return {"ok": True}

    server = _serve(tmp_path, handle)
    target = tmp_path / _control.CONTROL_SOCKET
    replies: list[dict[str, Any]] = []
    callers = [
        threading.Thread(target=lambda: replies.append(call(target, {"op": "x"}, 15)))
        for _ in range(CONTROL_MAX_HANDLERS)
    ]
    try:
        for caller in callers:
            caller.start()
        for _ in range(CONTROL_MAX_HANDLERS):
            assert entered.acquire(timeout=10)  # every handler slot is taken
        busy = call(target, {"op": "x"}, 5)["error"]
        assert (busy["status"], busy["message"]) == (503, "the supervisor is busy; try again")
    finally:
        gate.set()
        for caller in callers:
            caller.join(timeout=15)
        server.stop()
    assert replies == [{"ok": True}] * CONTROL_MAX_HANDLERS
