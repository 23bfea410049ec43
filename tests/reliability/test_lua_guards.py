"""Issue 21, items 1 and 2: Lua that escaped the time guard, tried on real servers.

Item 1: an ``xpcall`` message handler that loops (or is slow) answers 504 at
the deadline, and the Lua states come back. Item 2: a script whose top level
never ends is a config error naming the operator, in ``pineapple check`` and
on a reload (422, the old config serving, later reloads unaffected). Each
server test runs in one process and with ``--workers 2``, with the same
expected answers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import pytest

from .._serve import run_cli
from ._lua import LuaServer, lua_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

GOOD = "function f() return n + 1 end"
SCRIPTS = {
    "main": GOOD,
    # The reproduction: the body fails, the handler never returns.
    "xloop": "function f() return xpcall(function() error('x') end,"
    " function(m) while true do end end) end",
    # A handler that would answer, but long after the 1 s deadline.
    "xslow": "function f() return xpcall(function() error('x') end,"
    " function(m) local x = 0 for i = 1, 1e10 do x = x + i end return x end) end",
}
TOP_LOOPS = "function f() return 1 end\nwhile true do end"
TOP_ALLOCATES = (
    "function f() return 1 end\n"
    "local t, mb = {}, string.rep('x', 1024 * 1024)\nfor i = 1, 1e9 do t[i] = mb .. i end"
)


@pytest.fixture(params=["one-process", "workers-2"])
def mode(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The ``serve`` arguments of the process model under test."""
    if request.param == "one-process":
        return []
    shared = tmp_path / "shm"
    shared.mkdir()
    return ["--workers", "2", "--shared-dir", str(shared)]


@contextlib.contextmanager
def serving(config: Path, mode: list[str]) -> Iterator[LuaServer]:
    """``pineapple serve CONFIG --no-watch`` in ``mode``; every process of it killed after."""
    with LuaServer(config, "--no-watch", *mode) as server:
        yield server


def _write(path: Path, scripts: Mapping[str, str]) -> None:
    path.write_bytes(lua_config(scripts=scripts))


def test_looping_xpcall_handlers_answer_504_and_free_their_states(
    tmp_path: Path, mode: list[str]
) -> None:
    config = tmp_path / "lua.json"
    _write(config, SCRIPTS)
    with serving(config, mode) as server:
        # 10 at once: more than the 8 Lua states of one operator.
        with ThreadPoolExecutor(10) as pool:
            started = time.monotonic()
            answers = list(pool.map(lambda _: server.execute("xloop", timeout=20.0), range(10)))
            took = time.monotonic() - started
        assert [a.status_code for a in answers] == [504] * 10
        for answer in answers:
            assert 'deadline exceeded in operator "xloop"' in answer.json()["error"]
        assert took < 10.0  # 1 s deadline, in rounds of 8; generous for a loaded machine
        # The states were discarded and rebuilt: the operator answers again.
        assert server.execute("xloop", timeout=20.0).status_code == 504
        assert server.execute("main", 1).json()["common"]["out"] == 2


def test_a_slow_xpcall_handler_stops_at_the_deadline(tmp_path: Path, mode: list[str]) -> None:
    config = tmp_path / "lua.json"
    _write(config, SCRIPTS)
    with serving(config, mode) as server:
        started = time.monotonic()
        answer = server.execute("xslow", timeout=20.0)
        took = time.monotonic() - started
        assert answer.status_code == 504
        assert 'deadline exceeded in operator "xslow"' in answer.json()["error"]
        assert took < 4.0  # the 1 s deadline, not the handler's many seconds


def _reload(server: LuaServer) -> httpx.Response:
    return server.client.post("/admin/reload", timeout=60.0)


@pytest.mark.parametrize(
    ("script", "needle"),
    [(TOP_LOOPS, "ran past the time limit (1000 ms"), (TOP_ALLOCATES, "not enough memory")],
    ids=["loops", "allocates"],
)
def test_a_reload_whose_top_level_never_ends_is_refused(
    tmp_path: Path, mode: list[str], script: str, needle: str
) -> None:
    config = tmp_path / "lua.json"
    _write(config, {"main": GOOD})
    with serving(config, mode) as server:
        assert server.execute("main", 1).json()["common"]["out"] == 2
        _write(config, {"main": GOOD, "top": script})
        started = time.monotonic()
        refused = _reload(server)
        assert time.monotonic() - started < 30.0
        assert refused.status_code == 422, refused.text
        text = refused.json()["error"]
        assert 'failed to load script of operator "top"' in text and needle in text
        # The old config serves: its group answers, the new one does not exist.
        assert server.execute("main", 1).json()["common"]["out"] == 2
        assert server.execute("top", 1).status_code == 404
        # The reload lock was let go: the next good config loads at once.
        _write(config, {"main": "function f() return n + 2 end"})
        accepted = _reload(server)
        assert accepted.status_code == 200, accepted.text
        end = time.monotonic() + 30.0
        while server.execute("main", 1).json()["common"]["out"] != 3:  # bounded: 30 s
            assert time.monotonic() < end, "the good config never served"


@pytest.mark.parametrize(
    ("script", "needle"),
    [(TOP_LOOPS, "ran past the time limit (1000 ms"), (TOP_ALLOCATES, "not enough memory")],
    ids=["loops", "allocates"],
)
def test_check_refuses_a_top_level_that_never_ends(
    tmp_path: Path, script: str, needle: str
) -> None:
    config = tmp_path / "lua.json"
    _write(config, {"main": GOOD, "top": script})
    started = time.monotonic()
    done = run_cli("check", str(config), timeout=60)
    assert time.monotonic() - started < 30.0
    assert done.returncode == 1, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert 'failed to load script of operator "top"' in output and needle in output
    assert orjson.loads(config.read_bytes())  # the file is left as it was
