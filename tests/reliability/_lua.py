"""A real ``pineapple serve`` process whose pipeline groups each run one Lua script."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson

from .._serve import CLOSE_GRACE, Serve, cli_env

SCRIPTS: dict[str, str] = {
    "main": "function f() return n + 1 end",
    "spin": "function f() while true do end end",
    "count": "function f() local x = 0 for i = 1, n do x = x + 1 end return x end",
    "catch": "function f() while true do pcall(function() while true do end end) end end",
    "tostr": (
        "function f()\n"
        "  local t = setmetatable({}, {__tostring = function(x) return tostring(x) end})\n"
        "  return tostring(t) end"
    ),
    "gsub": (
        "local function r(d) if d == 0 then return 'x' end\n"
        "  return (string.gsub('a', 'a', function() return r(d - 1) end)) end\n"
        "function f() return r(n) end"
    ),
    "bomb": (
        "function f() local t, mb = {}, string.rep('x', 1024 * 1024)\n"
        "  for i = 1, n do t[i] = mb .. i end return #t end"
    ),
    "fn": "function f() return function() end end",
    "shout": "function f() error(string.rep('x', n)) end",
    "pattern": "function f() return (string.find(string.rep('a', n), '.-.-.-.-.-b')) end",
}


def lua_config(
    params: Mapping[str, Mapping[str, Any]] | None = None,
    scripts: Mapping[str, str] | None = None,
) -> bytes:
    """A unified config: group ``g`` runs the operator ``g`` (``scripts[g]``, common mode;
    ``scripts`` defaults to :data:`SCRIPTS`)."""
    scripts = SCRIPTS if scripts is None else scripts
    meta = {"common_input": ["n"], "common_output": ["out"], "item_input": [], "item_output": []}
    operators = {
        name: {
            "type_name": "transform_by_lua",
            "lua_script": script,
            "function_for_common": "f",
            **(params or {}).get(name, {}),
            "$metadata": meta,
        }
        for name, script in scripts.items()
    }
    root = {
        "_PINEAPPLE_VERSION": 1,
        "_PINEAPPLE_CREATE_TIME": "2026-01-01T00:00:00Z",
        "pipeline_config": {"operators": operators},
        "pipeline_group": {name: {"pipeline": [name]} for name in scripts},
        "flow_contract": {
            "common_input": ["n"],
            "item_input": [],
            "common_output": ["out"],
            "item_output": [],
        },
    }
    return orjson.dumps(root)


class LuaServer(Serve):
    """``pineapple serve`` of a Lua config (the default Lua backend), with an HTTP client."""

    def __init__(self, config: Path, *args: str) -> None:
        super().__init__(config, *args, env=cli_env(drop=["PINEAPPLE_LUA_BACKEND"]))
        self.client = httpx.Client(base_url=self.url, timeout=10.0)

    def execute(self, group: str, n: float = 1, timeout: float = 10.0) -> httpx.Response:
        """``POST /execute/{group}`` with ``common.n = n``."""
        body = orjson.dumps({"common": {"n": n}, "items": []})
        return self.client.post(f"/execute/{group}", content=body, timeout=timeout)

    def answers_while_running(self, group: str, n: float = 1) -> httpx.Response:
        """``group``'s answer, after ``/healthz`` and ``main`` answered while it still ran.

        The request runs on its own thread (own client, 15 s timeout); five
        rounds of probes, each with a 2 s timeout, must all answer 200 before
        it ends. Bounded: every wait here has a timeout.
        """
        done = threading.Event()
        answers: list[httpx.Response] = []

        def run() -> None:
            try:
                with httpx.Client(base_url=self.url, timeout=15.0) as client:
                    body = orjson.dumps({"common": {"n": n}, "items": []})
                    answers.append(client.post(f"/execute/{group}", content=body))
            finally:
                done.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            for _ in range(5):
                assert self.client.get("/healthz", timeout=2.0).status_code == 200
                assert self.execute("main", 1, timeout=2.0).status_code == 200
            assert not done.is_set(), f"the {group} request ended before the checks"
        finally:
            thread.join(15.0)
        assert answers, f"the {group} request did not answer within 15 s"
        return answers[0]

    def rss_bytes(self) -> int:
        """The server process's resident set size."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert found is not None
        return int(found.group(1)) * 1024

    def close(self, grace: float = CLOSE_GRACE) -> None:
        if hasattr(self, "client"):
            self.client.close()
        super().close(grace)


@contextmanager
def lua_server(
    tmp_path: Path, params: Mapping[str, Mapping[str, Any]] | None = None, *args: str
) -> Iterator[LuaServer]:
    """A :class:`LuaServer` serving :func:`lua_config`, always killed afterwards."""
    config = tmp_path / "lua.json"
    config.write_bytes(lua_config(params))
    with LuaServer(config, *args) as server:
        yield server
