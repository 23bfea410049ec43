"""Lua 5.1 (the default, with the time hook) against LuaJIT: ``python -m benchmarks.lua_backends``.

Each backend runs in a child interpreter (``PINEAPPLE_LUA_BACKEND`` is read
once per process): an item function over 1,000 items, a 200,000-step loop in
a common function, and an item function calling ``string.find``, ``gsub`` and
``match`` on a short string per item (the cost of the bounded patterns),
through the engine, median of 200 runs after 20 warm-ups.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

__all__ = ["main", "measure"]

RUNS = 200
WARMUP = 20


def _config() -> dict[str, Any]:
    items = [{"x": i, "w": f"item {i}  of  the  list"} for i in range(1000)]
    text = (
        "function h() local s = string.gsub(w, '%s+', ' ')\n"
        "  return string.find(s, 'of', 1, true) + #string.match(s, '^(%a+)') end"
    )
    loop = "function g() local s = 0 for i = 1, 200000 do s = s + i end return s end"
    return {
        "pipeline_config": {
            "operators": {
                "rec": {
                    "type_name": "recall_static",
                    "items": items,
                    "$metadata": {"item_output": ["x", "w"]},
                },
                "item": {
                    "type_name": "transform_by_lua",
                    # A local: the general loop, one Lua call an item (a bare `return`
                    # of the fields would run inline, or without Lua on the compiled core).
                    "lua_script": "function f() local y = x * 2 return y + 1 end",
                    "function_for_item": "f",
                    "$metadata": {"item_input": ["x"], "item_output": ["y"]},
                },
                "text": {
                    "type_name": "transform_by_lua",
                    "lua_script": text,
                    "function_for_item": "h",
                    "$metadata": {"item_input": ["w"], "item_output": ["z"]},
                },
                "loop": {
                    "type_name": "transform_by_lua",
                    "lua_script": loop,
                    "function_for_common": "g",
                    "$metadata": {"common_input": ["n"], "common_output": ["s"]},
                },
            },
            "pipeline_map": {},
        },
        "pipeline_group": {
            "main": {"pipeline": ["rec", "item"]},
            "loop": {"pipeline": ["loop"]},
            "text": {"pipeline": ["rec", "text"]},
        },
        "flow_contract": {"common_input": ["n"], "item_output": ["y"], "common_output": ["s"]},
    }


def measure() -> dict[str, float]:
    """Median milliseconds per request of each group, in this process's backend."""
    from pineapple import Context, builtins
    from pineapple.engine import Engine

    engine = Engine(_config(), registry=builtins.operator_registry())
    ctx = Context()
    out: dict[str, float] = {}
    for group in ("main", "loop", "text"):
        request = {"common": {"n": 1}, "items": []}
        for _ in range(WARMUP):
            engine.execute(ctx, request, group=group)
        times = []
        for _ in range(RUNS):  # bounded: RUNS requests
            started = time.perf_counter()
            engine.execute(ctx, request, group=group)
            times.append(time.perf_counter() - started)
        out[group] = statistics.median(times) * 1e3
    engine.close()
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        result = measure()
        print(f"{result['main']:.3f} {result['loop']:.3f} {result['text']:.3f}")
        return 0
    print(
        "| backend | 1,000 items, item function | 200,000-step loop, common function "
        "| 1,000 items, find/gsub/match |"
    )
    print("|---|---|---|---|")
    for backend in ("lua51", "luajit21"):
        env = {**os.environ, "PINEAPPLE_LUA_BACKEND": backend}
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.lua_backends", "--child"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=True,
        )
        items, loop, text = done.stdout.split()
        print(f"| {backend} | {items} ms | {loop} ms | {text} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
