"""Target 6: ``/execute`` on the ``small_010`` fixture against a bare Starlette endpoint.

Both servers are separate processes on loopback ports with the same uvicorn
settings; the same load generator (``benchmarks/_loadgen.c``, its own process,
16 keep-alive connections) drives each in turn, rounds interleaved. The bare
endpoint returns the very bytes our server answered for the fixture request.
On a 2-core machine, server and load generator share the cores, as they did
for the Go engine's published figure.

Issue 23's row, in the same run: the server's CPU seconds per request (its
process's user+system time over each round, from /proc), ours against a
raw ASGI app (no Starlette) that answers the same bytes under the same
uvicorn settings; the median of the rounds. Target: at most 1.3x. CPU per
request, not QPS: what other processes take from the cores matters less.
The detail also gives how often the load generator slept waiting for an
answer, per request: each of those wake-ups is paid inside the server's
``write()``, so a server whose answers leave one at a time pays more.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ._measure import Result, median
from ._procs import REPO, free_port, load, post, serve_bare, serve_pineapple
from ._proctree import cpu_seconds

__all__ = ["GO_QPS", "fixtures_dir", "serving"]

GO_QPS = 36_298
"""The Go engine's published QPS on ``small_010`` (2 CPU, concurrency 16)."""

NAME = "serving small_010: /execute QPS / bare Starlette QPS"
CPU_NAME = "serving small_010: server CPU per request, /execute / raw ASGI app"
CPU_LIMIT = 1.3


def fixtures_dir() -> Path:
    """``$PINE_FIXTURES_DIR``, default ``../shared/fixtures/pineapple`` from the repo root."""
    raw = os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple")
    path = Path(raw)
    return path if path.is_absolute() else (REPO / path).resolve()


def serving(rounds: int = 3, seconds: float = 4.0) -> list[Result]:
    """Median QPS of interleaved rounds; the ratio is bare / ours (limit 1/0.6)."""
    bench = fixtures_dir() / "benchmarks"
    config, request = bench / "small_010_config.json", bench / "small_010_request.json"
    if not config.is_file() or not request.is_file():
        return [Result(6, NAME, None, 1 / 0.6, f"fixture pair absent under {bench}")]
    ours_port, bare_port, raw_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp, serve_pineapple(config, ours_port) as server:
        status, payload = post(ours_port, "/execute", request.read_bytes())
        if status != 200:
            raise RuntimeError(f"/execute on small_010 answered {status}: {payload[:200]!r}")
        response = Path(tmp) / "response.json"
        response.write_bytes(payload)
        qps: dict[str, list[float]] = {"ours": [], "bare": [], "raw": []}
        cpu: dict[str, list[float]] = {"ours": [], "bare": [], "raw": []}
        per_request: dict[str, list[float]] = {"ours": [], "raw": []}
        woken: dict[str, list[float]] = {"ours": [], "raw": []}
        with (
            serve_bare(response, bare_port) as bare_proc,
            serve_bare(response, raw_port, raw=True) as raw_proc,
        ):
            ports = {"ours": ours_port, "bare": bare_port, "raw": raw_port}
            pids = {"ours": server.pid, "bare": bare_proc.pid, "raw": raw_proc.pid}
            for side in ports:  # warm-up
                load(ports[side], request, 1.0)
            for r in range(rounds):
                order = ["ours", "bare", "raw"]
                for side in order[r % 3 :] + order[: r % 3]:
                    used = cpu_seconds(pids[side])
                    got = load(ports[side], request, seconds)
                    used = cpu_seconds(pids[side]) - used
                    if got["errors"]:
                        raise RuntimeError(f"{side}: {got['errors']} failed requests")
                    qps[side].append(got["count"] / got["seconds"])
                    cpu[side].append(got["cpu_seconds"] / got["seconds"])
                    if side in per_request and got["count"]:
                        per_request[side].append(used / got["count"])
                        woken[side].append(got["sleeps"] / got["count"])
    ours_us, raw_us = median(per_request["ours"]) * 1e6, median(per_request["raw"]) * 1e6
    cpu_row = Result(
        23,
        f"{CPU_NAME} (target <= {CPU_LIMIT}x)",
        ours_us / raw_us,
        CPU_LIMIT,
        f"ours {ours_us:.1f} us vs raw ASGI {raw_us:.1f} us of server CPU per request "
        f"({median(qps['ours']):,.0f} vs {median(qps['raw']):,.0f} QPS); load generator woken "
        f"{median(woken['ours']):.2f} vs {median(woken['raw']):.2f} times a request; "
        "concurrency 16",
    )
    ours, bare = median(qps["ours"]), median(qps["bare"])
    return [
        Result(
            6,
            NAME + " (target >= 60%, shown as bare/ours <= 1/0.6)",
            bare / ours,
            1 / 0.6,
            f"ours {ours:,.0f} QPS = {ours / bare:.0%} of bare {bare:,.0f} QPS; "
            f"Go engine (published) {GO_QPS:,} QPS; load generator used "
            f"{median(cpu['bare']):.0%} of a core against bare; concurrency 16, "
            f"{os.cpu_count()} cores shared",
        ),
        cpu_row,
    ]
