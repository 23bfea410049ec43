"""``serve --pin-cpus``: what pinning each serving process to one CPU saves.

The pipeline is ``realistic_for_you_calibrated`` with its CPU stubs' latency
profiles taken out (``--bench-stubs``; its I/O stubs still sleep, so every
request wakes a pool thread about ten times): the engine's own work and the
server's threads, which is what pinning changes. The same config is served by
two servers up at once, one with ``--pin-cpus`` and one without, in one
process; load rounds interleaved (the C load generator, 16 keep-alive
connections); medians. Read per round: QPS, the server's CPU seconds per
request (its whole process tree) and its threads' context switches per
request (``/proc/PID/task/*/status``, the threads alive at the round's end).

Target: server CPU per request, pinned / not pinned, at most 0.8x.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ._measure import Result, median
from ._procs import free_port, load, post, serve_pineapple
from ._proctree import cpu_seconds
from .serving import fixtures_dir

__all__ = ["pinned_serving", "without_cpu_stubs"]

NAME = (
    "pinning: realistic_for_you_calibrated without its CPU stubs, one process: server CPU "
    "per request, --pin-cpus / not pinned (target <= 0.8x)"
)


def without_cpu_stubs(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the latency profile of every ``cpu`` stub taken out (I/O stubs keep
    theirs)."""
    for op in config["pipeline_config"]["operators"].values():  # bounded: the operators
        profile = op.get("bench_profile")
        if isinstance(profile, dict) and profile.get("type") == "cpu":
            del op["bench_profile"]
    return config


def _switches(pid: int) -> int:
    """Voluntary and involuntary context switches of ``pid``'s threads alive now."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():  # bounded: the process's threads
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:  # a thread that ended meanwhile
            continue
        total += sum(int(x.split()[1]) for x in lines if "ctxt_switches:" in x)
    return total


def _round(port: int, pid: int, request: Path, seconds: float) -> dict[str, float]:
    cpu, switches = cpu_seconds(pid), _switches(pid)
    got = load(port, request, seconds)
    if got["errors"]:
        raise RuntimeError(f"port {port}: {got['errors']} failed requests")
    n = max(1, got["count"])
    return {
        "qps": got["count"] / got["seconds"],
        "cpu_us": (cpu_seconds(pid) - cpu) / n * 1e6,
        "switches": (_switches(pid) - switches) / n,
    }


def pinned_serving(rounds: int = 4, seconds: float = 4.0) -> list[Result]:
    """Server CPU per request with and without ``--pin-cpus``, one process each."""
    bench = fixtures_dir() / "benchmarks"
    source = bench / "realistic_for_you_calibrated_config.json"
    request = bench / "realistic_for_you_calibrated_request.json"
    if not source.is_file() or not request.is_file():
        return [Result(38, NAME, None, 0.8, f"fixture pair absent under {bench}")]
    if not hasattr(os, "sched_setaffinity"):
        return [Result(38, NAME, None, 0.8, "this platform sets no CPU affinity")]
    runs: dict[str, list[dict[str, float]]] = {"pinned": [], "not pinned": []}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "realistic_without_cpu_stubs.json"
        config.write_text(json.dumps(without_cpu_stubs(json.loads(source.read_text()))))
        ports = {"pinned": free_port(), "not pinned": free_port()}
        extra = {"pinned": ["--bench-stubs", "--pin-cpus"], "not pinned": ["--bench-stubs"]}
        with (
            serve_pineapple(config, ports["pinned"], extra["pinned"]) as pinned,
            serve_pineapple(config, ports["not pinned"], extra["not pinned"]) as unpinned,
        ):
            pids = {"pinned": pinned.pid, "not pinned": unpinned.pid}
            for name, port in ports.items():
                status, payload = post(port, "/execute", request.read_bytes())
                if status != 200:
                    raise RuntimeError(f"{name}: /execute answered {status}: {payload[:200]!r}")
                load(port, request, 1.0)  # warm-up
            for r in range(rounds):
                for name in ("pinned", "not pinned") if r % 2 == 0 else ("not pinned", "pinned"):
                    runs[name].append(_round(ports[name], pids[name], request, seconds))
    m = {name: {k: median([x[k] for x in v]) for k in v[0]} for name, v in runs.items()}
    p, u = m["pinned"], m["not pinned"]
    detail = (
        f"pinned {p['cpu_us']:,.0f} us, {p['switches']:.0f} context switches, {p['qps']:,.0f} "
        f"QPS; not pinned {u['cpu_us']:,.0f} us, {u['switches']:.0f} switches, {u['qps']:,.0f} "
        f"QPS; concurrency 16, {len(os.sched_getaffinity(0))} CPUs, load "
        f"{os.getloadavg()[0]:.1f}"
    )
    return [Result(38, NAME, p["cpu_us"] / u["cpu_us"], 0.8, detail)]
