"""``serve --workers N`` (issue 14): throughput with 2 workers, and database reads per refresh.

Throughput: ``/execute`` on the ``small_010`` fixture, ``--workers 2`` against
``--workers 1``, both servers up at once and load rounds interleaved (the
C load generator of ``benchmarks/_loadgen.c``, its own process, 16 keep-alive
connections). Beside QPS it reads the CPU seconds of each server's whole
process tree (supervisor and workers) around every round, the generator's
own CPU, and the machine's CPU used by anything else in the same window.

Database reads: a ``feed_data`` table in MariaDB served with ``--workers 4``:
at start, per admin refresh, and after a config reload that keeps the entry
(with a ``version_query`` on a one-row table beside it: the reload carries the
table over, and the refresh after it answers ``not_modified`` from the version
alone).
MariaDB counts, per table, the rows its handlers read
(``information_schema.TABLE_STATISTICS.ROWS_READ``, on while ``userstat`` is
on: this run turns it on and restores it). The table's name is unique to
this run, so other clients of the same server do not touch the count, and
``ROWS_READ / rows`` is the number of full reads of it (one ``SELECT *``
reads every row once; nothing else reads this table).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil

from ._configs import feed_config
from ._mariadb import connect, feed_table, rows_read, unreachable, userstat_on
from ._measure import Result, invalid_closed_loop, median
from ._procs import free_port, load, post, serve_pineapple
from ._proctree import cpu_seconds
from .serving import fixtures_dir

__all__ = ["database_reads", "worker_throughput"]

THROUGHPUT = "workers: /execute QPS small_010, --workers 1 / --workers 2 (target >= 1.3x)"
EFFICIENCY = "workers: QPS per server CPU-second, one process / --workers 2 (target >= 0.9x)"
READS_START = "workers: MariaDB full table reads at start, --workers 4 (exactly 1)"
READS_REFRESH = "workers: MariaDB full table reads per admin refresh, --workers 4 (exactly 1)"
READS_RELOAD = (
    "workers: MariaDB full table reads by a config reload that keeps a version_query entry "
    "and a refresh after it, --workers 4 (exactly 0)"
)
OTHER_CPU_LIMIT = 0.5
"""Cores used by other processes during the throughput rounds past which 2 workers
cannot show their scaling on a 2-core machine: that row is then INVALID."""
READ_ROWS = 50_000
SETTLE_SECONDS = 5.0
"""How long to wait for the counter to stop moving after a start or refresh."""


def _busy_seconds() -> float:
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def _round(port: int, pid: int, request: Path, seconds: float) -> dict[str, float]:
    busy, server = _busy_seconds(), cpu_seconds(pid)
    got = load(port, request, seconds)
    server = cpu_seconds(pid) - server
    busy = _busy_seconds() - busy
    if got["errors"]:
        raise RuntimeError(f"port {port}: {got['errors']} failed requests")
    return {
        "qps": got["count"] / got["seconds"],
        "server_cpu": server,
        "per_cpu": got["count"] / server if server > 0 else 0.0,
        "generator": got["cpu_seconds"] / got["seconds"],
        "other": max(0.0, busy - server - got["cpu_seconds"]) / got["seconds"],
        "seconds": got["seconds"],
    }


def worker_throughput(rounds: int = 4, seconds: float = 4.0) -> list[Result]:
    """Median QPS and QPS per server CPU-second of interleaved rounds, 1 worker vs 2."""
    bench = fixtures_dir() / "benchmarks"
    config, request = bench / "small_010_config.json", bench / "small_010_request.json"
    if not config.is_file() or not request.is_file():
        why = f"fixture pair absent under {bench}"
        return [Result(14, THROUGHPUT, None, 1 / 1.3, why), Result(14, EFFICIENCY, None, 1.1, why)]
    ports = {1: free_port(), 2: free_port()}
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with (
        tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d,
        serve_pineapple(config, ports[1]) as one,
        serve_pineapple(config, ports[2], ["--workers", "2", "--shared-dir", d]) as two,
    ):
        pids = {1: one.pid, 2: two.pid}
        for n, port in ports.items():
            status, payload = post(port, "/execute", request.read_bytes())
            if status != 200:
                raise RuntimeError(f"--workers {n}: /execute answered {status}: {payload[:200]!r}")
            load(port, request, 1.0)  # warm-up
        for r in range(rounds):
            for n in (1, 2) if r % 2 == 0 else (2, 1):
                runs[n].append(_round(ports[n], pids[n], request, seconds))
    m = {n: {k: median([x[k] for x in v]) for k in v[0]} for n, v in runs.items()}
    gen = max(x["generator"] for v in runs.values() for x in v)
    invalid = invalid_closed_loop(generator_cpu_seconds=gen, seconds=1.0)
    other = max(x["other"] for x in runs[2])
    if invalid is None and other > OTHER_CPU_LIMIT:
        invalid = (
            f"other processes used up to {other:.2f} cores during the --workers 2 rounds "
            f"(> {OTHER_CPU_LIMIT}): the machine's cores were not free"
        )
    load_avg = os.getloadavg()[0]
    detail = (
        f"{m[2]['qps']:,.0f} vs {m[1]['qps']:,.0f} QPS ({m[2]['qps'] / m[1]['qps']:.2f}x); "
        f"load generator {m[2]['generator']:.0%} / {m[1]['generator']:.0%} of a core; "
        f"servers {m[2]['server_cpu'] / seconds:.2f} / {m[1]['server_cpu'] / seconds:.2f} cores; "
        f"others {m[2]['other']:.2f} / {m[1]['other']:.2f} cores; {os.cpu_count()} cores, "
        f"load {load_avg:.1f}"
    )
    efficiency = (
        f"{m[2]['per_cpu']:,.0f} vs {m[1]['per_cpu']:,.0f} requests per server CPU-second "
        f"({m[2]['per_cpu'] / m[1]['per_cpu']:.2f}x); load {load_avg:.1f}"
    )
    return [
        Result(14, THROUGHPUT, m[1]["qps"] / m[2]["qps"], 1 / 1.3, detail, invalid),
        Result(14, EFFICIENCY, m[1]["per_cpu"] / m[2]["per_cpu"], 1 / 0.9, efficiency),
    ]


@contextlib.contextmanager
def _table_statistics() -> Iterator[Any]:
    """A connection with ``userstat`` on (restored on exit)."""
    with contextlib.closing(connect()) as conn, userstat_on(conn):
        yield conn


def _settled(conn: Any, table: str, since: int, rows: int) -> float:
    """Full reads since ``since`` after SETTLE_SECONDS (by then every worker has
    started or refreshed, so a worker reading on its own would have been counted)."""
    time.sleep(SETTLE_SECONDS)
    return (rows_read(conn, table) - since) / rows


def _result(answer: bytes) -> Any:
    try:
        return json.loads(answer).get("result")
    except (ValueError, AttributeError):
        return answer[:100]


def _reload_reads(
    conn: Any, table: str, workers: int, folder: Path
) -> tuple[float, str, str | None]:
    """Full reads of ``table`` by a reload that keeps its entry and a refresh after it;
    what they answered; why the row cannot be judged (the reload was not applied or the
    refresh failed, so no read would prove nothing), or None."""
    version = f"{table}_v"
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{version}` (v INT)")
        cur.execute(f"INSERT INTO `{version}` VALUES (1)")
    try:
        config = folder / "versioned.json"
        data = feed_config(table)
        data["resource_config"]["feed"]["params"]["version_query"] = f"SELECT v FROM `{version}`"
        config.write_bytes(orjson.dumps(data))
        port = free_port()
        extra = ["--workers", str(workers), "--shared-dir", str(folder)]
        with serve_pineapple(config, port, extra, timeout=300):
            time.sleep(SETTLE_SECONDS)  # the start and its one read are over
            base = rows_read(conn, table)
            data["pipeline_config"]["operators"]["keep_top"]["top_n"] = 21  # the feed is kept
            config.write_bytes(orjson.dumps(data))
            reload_status, reloaded = post(port, "/admin/reload")
            refresh_status, refreshed = post(port, "/admin/resources/feed/refresh")
            reads = _settled(conn, table, base, READ_ROWS)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{version}`")
    said = (
        f"reload answered {reload_status} {_result(reloaded)!r}, refresh {refresh_status} "
        f"{_result(refreshed)!r}"
    )
    applied = reload_status == 200 and _result(reloaded) == "ok" and refresh_status == 200
    return reads, said, None if applied else f"not a reload and a refresh: {said}"


def database_reads(workers: int = 4) -> list[Result]:
    """Full reads of the table by ``--workers 4``: at start, per admin refresh, and by a
    config reload that keeps a ``version_query`` entry."""
    reason = unreachable()
    if reason:
        return [
            Result(14, READS_START, None, 1.0, reason),
            Result(14, READS_REFRESH, None, 1.0, reason),
            Result(20, READS_RELOAD, None, 0.0, reason),
        ]
    port = free_port()
    with (
        feed_table(READ_ROWS, "r") as table,
        _table_statistics() as conn,
        tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d,
    ):
        config = Path(d) / "config.json"
        config.write_bytes(orjson.dumps(feed_config(table)))
        base = rows_read(conn, table)
        extra = ["--workers", str(workers), "--shared-dir", d]
        with serve_pineapple(config, port, extra, timeout=300):
            at_start = _settled(conn, table, base, READ_ROWS)
            base = rows_read(conn, table)
            status, answer = post(port, "/admin/resources/feed/refresh?force=1")
            refreshed = _settled(conn, table, base, READ_ROWS)
        reload_reads, reload_said, reload_invalid = _reload_reads(conn, table, workers, Path(d))
    said = f"admin refresh (to one worker) answered {status} {_result(answer)!r}"
    load_avg = os.getloadavg()[0]
    start_invalid = None if at_start > 0 else "the counter saw no read at start"
    return [
        Result(
            14,
            READS_START,
            at_start,
            1.0,
            f"{at_start:g} reads of {READ_ROWS:,} rows (TABLE_STATISTICS.ROWS_READ); "
            f"load {load_avg:.1f}",
            start_invalid,
        ),
        Result(
            14,
            READS_REFRESH,
            refreshed if refreshed > 0 else float("inf"),
            1.0,
            f"{refreshed:g} reads; {said}"
            + (
                ""
                if refreshed > 0
                else "; no read: the refresh did not reach the supervisor's loader"
            ),
            start_invalid,
        ),
        Result(
            20,
            READS_RELOAD,
            reload_reads,
            0.0,
            f"{reload_reads:g} reads of {READ_ROWS:,} rows; {reload_said}; load {load_avg:.1f}",
            reload_invalid,
        ),
    ]
