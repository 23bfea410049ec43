"""Target 5: a 200,000-row refresh must not starve ``/execute``.

``pineapple serve`` runs as a subprocess on a free loopback port with a
200,000-row ``feed_data`` table and a small pipeline recalling from it. The
load generator (its own process) schedules requests at a fixed rate, a
third of the server's measured capacity, and records each one's latency
from its scheduled time. Meanwhile this process alternates quiet gaps with
``POST /admin/resources/feed/refresh`` (synchronous: it returns when the new
table is swapped in). p99 of the requests scheduled inside refresh windows
is compared with p99 of those scheduled in the quiet gaps of the same run.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import orjson

from ._configs import feed_config, request_body
from ._mariadb import feed_table, unreachable
from ._measure import Result, invalid_open_loop
from ._procs import finish_load, free_port, load, post, serve_pineapple, start_load

__all__ = ["refresh_starvation"]

ROWS = 200_000
NAME = f"p99 /execute during {ROWS:,}-row refreshes / steady p99"


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def refresh_starvation(
    refreshes: int = 6, gap: float = 4.0, load_fraction: float = 1 / 3
) -> list[Result]:
    """p99 inside refresh windows / p99 inside the quiet gaps of the same run.

    The gaps last about as long as a refresh, so both p99s rest on a similar
    number of requests (with 1.5 s gaps the steady side had a third as many,
    and its p99 swung with a handful of samples).
    """
    reason = unreachable()
    if reason:
        return [Result(5, NAME, None, 2.0, reason)]
    port = free_port()
    with feed_table(ROWS, "s") as table, tempfile.TemporaryDirectory() as tmp:
        config, body = Path(tmp) / "config.json", Path(tmp) / "request.json"
        config.write_bytes(orjson.dumps(feed_config(table)))
        body.write_bytes(request_body())
        with serve_pineapple(config, port):
            status, answer = post(port, "/execute", body.read_bytes())
            if status != 200 or not orjson.loads(answer).get("items"):
                raise RuntimeError(f"/execute answered {status}: {answer[:200]!r}")
            alone = load(port, body, 1.0, concurrency=1)  # one at a time: the service time
            unloaded = alone["seconds"] / max(1, alone["count"])
            capacity = load(port, body, 2.0)["count"] / 2.0
            rate = max(50.0, capacity * load_fraction)
            # A refresh takes ~2 s here under this load (3-5 s with loader=thread:
            # paced, it yields to requests); leave room for all of them.
            seconds = gap + refreshes * (gap + 7.0) + 2.0
            out = Path(tmp) / "latencies.json"
            proc = start_load(port, body, seconds, out, latencies=True, rate=rate)
            windows: list[tuple[float, float]] = []
            started = time.monotonic()
            try:
                time.sleep(gap)
                for _ in range(refreshes):
                    t0 = time.monotonic()
                    status, answer = post(port, "/admin/resources/feed/refresh")
                    t1 = time.monotonic()
                    if status != 200 or json.loads(answer)["result"] != "swapped":
                        raise RuntimeError(f"refresh answered {status}: {answer[:300]!r}")
                    windows.append((t0, t1))
                    if t1 - started > seconds - gap:
                        break
                    time.sleep(gap)
            finally:
                got = finish_load(proc, out)
    if got["errors"]:
        raise RuntimeError(f"{got['errors']} requests failed")
    margin = 0.25  # a request just after a window may still queue behind it
    during, steady = [], []
    for start, latency in zip(got["starts"], got["latencies"], strict=True):
        if any(t0 <= start <= t1 for t0, t1 in windows):
            during.append(latency)
        elif all(start < t0 - margin or start > t1 + margin for t0, t1 in windows):
            steady.append(latency)
    p_during, p_steady = _p99(during), _p99(steady)
    refresh_s = sorted(t1 - t0 for t0, t1 in windows)[len(windows) // 2]
    invalid = invalid_open_loop(
        requested_rate=rate,
        completed=got["count"],
        seconds=got["seconds"],
        generator_cpu_seconds=got["cpu_seconds"],
        steady_p99=p_steady,
        unloaded=unloaded,
    )
    return [
        Result(
            5,
            NAME,
            p_during / p_steady,
            2.0,
            f"{p_during * 1e3:.1f} ms vs {p_steady * 1e3:.1f} ms at {rate:,.0f} req/s "
            f"(1/3 of capacity {capacity:,.0f}; held {got['count'] / got['seconds']:,.0f}); "
            f"unloaded {unloaded * 1e3:.2f} ms; {len(windows)} refreshes of "
            f"~{refresh_s:.1f} s; {len(during):,} vs {len(steady):,} requests",
            invalid,
        )
    ]
