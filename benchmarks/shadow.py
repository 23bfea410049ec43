"""Issue 36's row: a staged candidate shadowing 10% of ``/execute`` costs at most 15% more
server CPU per request.

One ``pineapple serve`` of the ``small_010`` fixture, driven by the load generator
(``benchmarks/_loadgen.c``, 16 keep-alive connections) in rounds that alternate:
nothing staged, then a candidate staged (the same config with another
``_PINEAPPLE_CREATE_TIME``, so every shadowed answer is compared and found the same) at
``share=0.1`` and aborted after the round. The server's CPU seconds per request
(its process's user+system time over each round, from /proc); the median of the
rounds, staged over not staged.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson

from ._measure import Result, median
from ._procs import free_port, load, post, serve_pineapple
from ._proctree import cpu_seconds
from .serving import fixtures_dir

__all__ = ["shadow_cost"]

NAME = "shadow at a 10% share: server CPU per request, staged / nothing staged"
LIMIT = 1.15


def shadow_cost(rounds: int = 3, seconds: float = 4.0) -> list[Result]:
    """Median server CPU per request with a candidate staged at 10% over none staged."""
    bench = fixtures_dir() / "benchmarks"
    source, request = bench / "small_010_config.json", bench / "small_010_request.json"
    if not source.is_file() or not request.is_file():
        return [Result(36, NAME, None, LIMIT, f"fixture pair absent under {bench}")]
    live = source.read_bytes()
    root = orjson.loads(live)
    root["_PINEAPPLE_CREATE_TIME"] = f"{root.get('_PINEAPPLE_CREATE_TIME')}/shadow"
    candidate = orjson.dumps(root)
    port = free_port()
    per_request: dict[str, list[float]] = {"off": [], "on": []}
    shadowed: list[int] = []
    dropped: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.json"
        config.write_bytes(live)
        with serve_pineapple(config, port) as server:
            load(port, request, 1.0)  # warm-up
            for r in range(rounds):
                for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    if side == "on":
                        config.write_bytes(candidate)
                        status, body = post(port, "/admin/reload?stage=1&share=0.1")
                        if status != 200:
                            raise RuntimeError(f"staging answered {status}: {body[:200]!r}")
                    used = cpu_seconds(server.pid)
                    got = load(port, request, seconds)
                    used = cpu_seconds(server.pid) - used
                    if got["errors"] or not got["count"]:
                        raise RuntimeError(f"{side}: {got['errors']} failed requests")
                    per_request[side].append(used / got["count"])
                    if side == "on":
                        status, body = post(port, "/admin/config/abort")
                        if status != 200:
                            raise RuntimeError(f"abort answered {status}: {body[:200]!r}")
                        summary = orjson.loads(body)["summary"]
                        shadowed.append(summary["requests"])
                        dropped.append(summary["dropped"])
                        config.write_bytes(live)
    off, on = median(per_request["off"]) * 1e6, median(per_request["on"]) * 1e6
    return [
        Result(
            36,
            f"{NAME} (target <= {LIMIT}x)",
            on / off,
            LIMIT,
            f"{on:.1f} us staged vs {off:.1f} us of server CPU per request; a round compared "
            f"{median([float(n) for n in shadowed]):,.0f} shadowed requests and dropped "
            f"{median([float(n) for n in dropped]):,.0f}; concurrency 16",
        )
    ]
