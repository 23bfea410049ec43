"""Issue 11, item 2: Lua cannot run forever (real server, real Lua)."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import httpx
import pytest

from ._lua import lua_server

pytestmark = pytest.mark.e2e

# 500 until the server maps DeadlineExceededError to 504 (the "deadline" change).
DEADLINE_STATUS = (504,)


@pytest.mark.parametrize(
    ("group", "n"),
    [("spin", 1), ("count", 1e300), ("catch", 1)],
    ids=["while-true", "loop-1e300-from-request", "pcall-catches-and-loops"],
)
def test_endless_script_stops_at_its_time_limit(tmp_path: Path, group: str, n: float) -> None:
    with lua_server(tmp_path) as server:  # default timeout_ms (1000)
        started = time.monotonic()
        answer = server.execute(group, n)
        took = time.monotonic() - started
        assert answer.status_code in DEADLINE_STATUS
        assert f'deadline exceeded in operator "{group}"' in answer.json()["error"]
        assert took < 6.0  # 1 s limit; generous for a loaded machine
        assert server.execute("main", 1).json()["common"]["out"] == 2


def test_self_calling_tostring_is_stopped(tmp_path: Path) -> None:
    # Lua 5.1 bounds the C calls a metamethod recursion makes (200), so this
    # script stops before its deadline, as a script error (500) naming the
    # operator; a time stop would be 504. Either way it ends, and the server lives.
    with lua_server(tmp_path) as server:
        started = time.monotonic()
        answer = server.execute("tostr")
        assert time.monotonic() - started < 6.0
        assert answer.status_code in (500, 504)
        error = answer.json()["error"]
        assert 'operator "tostr"' in error
        assert "C stack overflow" in error or "deadline exceeded" in error
        assert server.execute("main", 1).status_code == 200


def test_healthz_and_other_requests_answer_while_lua_spins(tmp_path: Path) -> None:
    with lua_server(tmp_path, {"spin": {"timeout_ms": 4000}}) as server:
        assert server.answers_while_running("spin").status_code in DEADLINE_STATUS


def test_sigterm_exits_zero_while_lua_spins(tmp_path: Path) -> None:
    with lua_server(tmp_path) as server:  # default timeout_ms (1000)
        sent = threading.Event()

        def spin() -> None:
            with httpx.Client(base_url=server.url, timeout=15.0) as client:
                sent.set()
                # The server may close the connection while it drains.
                with contextlib.suppress(httpx.HTTPError):
                    client.post("/execute/spin", content=b'{"common": {"n": 1}, "items": []}')

        thread = threading.Thread(target=spin, daemon=True)
        thread.start()
        assert sent.wait(5.0)
        # Proof that the request is in (and Lua spinning) before the signal:
        # the server still answers other requests meanwhile.
        assert server.execute("main", 1, timeout=2.0).status_code == 200
        # drain_seconds (30) + 2 s is the contract; Lua's 1 s limit makes it far shorter.
        assert server.terminate(timeout=15.0) == 0
        thread.join(15.0)


def test_sigterm_exits_within_drain_seconds_plus_two(tmp_path: Path) -> None:
    # A request allowed to spin for 60 s: only --drain-seconds bounds the exit.
    slow = {"spin": {"timeout_ms": 60_000}}
    args = ("--request-timeout-ms", "60000", "--drain-seconds", "1")
    with lua_server(tmp_path, slow, *args) as server:
        sent = threading.Event()

        def spin() -> None:
            with httpx.Client(base_url=server.url, timeout=70.0) as client:
                sent.set()
                with contextlib.suppress(httpx.HTTPError):
                    client.post("/execute/spin", content=b'{"common": {"n": 1}, "items": []}')

        thread = threading.Thread(target=spin, daemon=True)
        thread.start()
        assert sent.wait(5.0)
        assert server.execute("main", 1, timeout=2.0).status_code == 200
        started = time.monotonic()
        code = server.terminate(timeout=20.0)
        took = time.monotonic() - started
        assert code == 0
        assert took < 1 + 2 + 2.0  # drain 1 s + 2 s, and 2 s for a loaded machine
        thread.join(5.0)
