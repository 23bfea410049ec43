"""A pathological Lua string pattern is stopped by the deadline (real server, real Lua)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ._lua import lua_server

pytestmark = pytest.mark.e2e

# string.find(string.rep("a", 30000), ".-.-.-.-.-b"): some 10^22 steps in C.
PATHOLOGICAL = 30000


def test_pathological_pattern_answers_504_within_the_deadline(tmp_path: Path) -> None:
    with lua_server(tmp_path) as server:  # default timeout_ms (1000)
        started = time.monotonic()
        answer = server.execute("pattern", PATHOLOGICAL)
        took = time.monotonic() - started
        assert answer.status_code == 504
        assert 'deadline exceeded in operator "pattern"' in answer.json()["error"]
        assert took < 6.0  # 1 s limit; generous for a loaded machine
        assert server.execute("pattern", 10).json()["common"]["out"] is None
        assert server.execute("main", 1).json()["common"]["out"] == 2


def test_healthz_answers_while_a_pattern_runs(tmp_path: Path) -> None:
    with lua_server(tmp_path, {"pattern": {"timeout_ms": 4000}}) as server:
        assert server.answers_while_running("pattern", PATHOLOGICAL).status_code == 504
