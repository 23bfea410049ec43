"""Target 6: ``/execute`` on the ``small_010`` fixture against a bare Starlette endpoint.

Both servers are separate processes on loopback ports with the same uvicorn
settings; the same load generator (``benchmarks._loadgen``, its own process,
16 keep-alive connections) drives each in turn, rounds interleaved. The bare
endpoint returns the very bytes our server answered for the fixture request.
On a 2-core machine, server and load generator share the cores, as they did
for the Go engine's published figure.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ._measure import Result, median
from ._procs import REPO, free_port, load, post, serve_bare, serve_pineapple

__all__ = ["GO_QPS", "fixtures_dir", "serving"]

GO_QPS = 36_298
"""The Go engine's published QPS on ``small_010`` (2 CPU, concurrency 16)."""

NAME = "serving small_010: /execute QPS / bare Starlette QPS"


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
    ours_port, bare_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp, serve_pineapple(config, ours_port):
        status, payload = post(ours_port, "/execute", request.read_bytes())
        if status != 200:
            raise RuntimeError(f"/execute on small_010 answered {status}: {payload[:200]!r}")
        response = Path(tmp) / "response.json"
        response.write_bytes(payload)
        qps: dict[str, list[float]] = {"ours": [], "bare": []}
        cpu: dict[str, list[float]] = {"ours": [], "bare": []}
        with serve_bare(response, bare_port):
            ports = {"ours": ours_port, "bare": bare_port}
            for side in ports:  # warm-up
                load(ports[side], request, 1.0)
            for r in range(rounds):
                for side in ("ours", "bare") if r % 2 == 0 else ("bare", "ours"):
                    got = load(ports[side], request, seconds)
                    if got["errors"]:
                        raise RuntimeError(f"{side}: {got['errors']} failed requests")
                    qps[side].append(got["count"] / got["seconds"])
                    cpu[side].append(got["cpu_seconds"] / got["seconds"])
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
        )
    ]
