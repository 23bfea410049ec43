"""Issue 11, item 4: Lua memory is bounded in total and returned (real server, real Lua)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ._lua import lua_server

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024


def test_concurrent_memory_bombs_fail_and_rss_comes_back(tmp_path: Path) -> None:
    with lua_server(tmp_path) as server:
        assert server.execute("bomb", 10).status_code == 200  # warm: one state built
        baseline = server.rss_bytes()
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda _: server.execute("bomb", 1e9, timeout=30.0), range(12)))
        errors = [answer.json()["error"] for answer in answers]
        assert all(answer.status_code in (500, 504) for answer in answers), errors
        assert all('operator "bomb"' in error for error in errors)
        # Most hit the memory limit; on a loaded machine some may wait for a
        # state (8 at most) past their deadline instead.
        assert any("not enough memory" in error for error in errors), errors
        assert all("not enough memory" in e or "deadline exceeded" in e for e in errors)
        # Bounded: polls for at most 10 s (the bound), 50 ms apart.
        until = time.monotonic() + 10.0
        rss = server.rss_bytes()
        while rss > baseline + 100 * MiB and time.monotonic() < until:
            time.sleep(0.05)
            rss = server.rss_bytes()
        assert rss <= baseline + 100 * MiB, f"RSS {rss // MiB} MiB, baseline {baseline // MiB} MiB"
        assert server.execute("main", 1).status_code == 200


def test_a_returned_function_is_an_error_naming_the_operator(tmp_path: Path) -> None:
    with lua_server(tmp_path) as server:
        answer = server.execute("fn")
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert 'operator "fn"' in error
        assert "cannot return a Lua function" in error
        assert "0x" not in error


def test_error_texts_are_capped_at_4_kib(tmp_path: Path) -> None:
    with lua_server(tmp_path) as server:
        answer = server.execute("shout", 1_000_000)
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert 'operator "shout"' in error
        assert len(error.encode()) <= 4096 + 200  # the Lua text is capped; the prefix names the op
        assert len(answer.content) <= 4096 + 400
        assert all(len(line) <= 4096 + 400 for line in server.log)
