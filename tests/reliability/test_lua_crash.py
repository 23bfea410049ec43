"""Issue 11, item 3: Lua cannot crash the process (real server, real Lua)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._lua import lua_server

pytestmark = pytest.mark.e2e


def test_gsub_recursion_to_depth_1000_answers_500_and_the_process_survives(
    tmp_path: Path,
) -> None:
    with lua_server(tmp_path) as server:
        assert server.execute("gsub", 10).json()["common"]["out"] == "x"  # shallow works
        answer = server.execute("gsub", 1000)
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert 'operator "gsub"' in error
        assert "C stack overflow" in error
        assert server.proc.poll() is None
        assert server.client.get("/healthz").status_code == 200
        assert server.execute("main", 1).json()["common"]["out"] == 2
