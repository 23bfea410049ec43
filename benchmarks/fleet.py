"""The fleet (issue 35): one producer, four pods (one of them ``--workers 2``), NATS JetStream.

A ``feed_data`` table of 1,000,000 rows in MariaDB, with a ``version_query``
on a one-row table beside it, is produced by ``pineapple publish`` (interval
:data:`INTERVAL`) into a ``nats-server -js`` of this run's own; four pods
follow it with ``pineapple serve --fleet URL --fleet-cache DIR`` and no config
of their own (they serve the fleet's). The producer reaches MariaDB through a
loopback forwarder (``_forwarder.py``), so the run can take the database away
from it alone.

The producer reads a change as a delta (``delta_query``: the rows whose
``updated_at`` is above the table's largest, merged into the table it holds).
One change is committed (an item's score raised to 1.5 and its ``updated_at``
to now, the version bumped);
each pod is asked ``/execute`` every :data:`POLL_SECONDS` until its answer
holds the new score. Rows:

- full reads of the table per change, counted by MariaDB
  (``TABLE_STATISTICS.ROWS_READ / rows``): exactly 1, whatever the pod count;
- from the change's commit to the last pod answering with it, against the
  producer's interval plus 2 s;
- the spread between the first and the last pod to answer with it: at most 1 s;
- one pod restarted with NATS and MariaDB both stopped: seconds from its start
  to an ``/execute`` answer from its cached generation, against 5 s;
- PSS of a consumer pod (one process) against a pod that reads the source
  itself (``serve CONFIG``), same table, same requests: at most 1.2x.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from server.fleet import CONFIG, CONFIG_KEY, announced, open_store

from ._configs import feed_config, request_body
from ._forwarder import Forwarder, forwarder
from ._mariadb import MYSQL, connect, feed_table, rows_read, unreachable, userstat_on
from ._measure import Result
from ._nats import NatsServer, nats_server, nats_unavailable
from ._procs import REPO, free_port, post, running, serve_pineapple, stop
from ._proctree import Memory, memory, processes

__all__ = ["fleet"]

ROWS = 1_000_000
INTERVAL = 5.0
"""The producer's refresh interval of the table (its version query runs this often)."""
POLL_SECONDS = 0.02
"""How often each pod is asked whether it serves the change."""
CHANGE_TIMEOUT = 120.0
"""How long the run waits for every pod to serve the change before it gives up."""
SETTLE_SECONDS = 3.0
PRODUCER_START = 300.0
"""How long the producer may take to load the table and publish it with the config."""
PODS = (["--workers", "1"], ["--workers", "1"], ["--workers", "1"], ["--workers", "2"])

READS = "fleet: MariaDB full table reads per change, 1 producer and 4 pods (exactly 1)"
PROPAGATION = "fleet: commit to every pod serving the change / (producer interval + 2 s)"
SPREAD = "fleet: first to last pod serving the change, seconds / 1 s"
RESTART = "fleet: pod restarted with NATS and MariaDB stopped, seconds to serve / 5 s"
MEMORY = "fleet: PSS of a consumer pod / a pod reading the source (target <= 1.2x)"


LOGS = os.environ.get("PINE_BENCH_FLEET_LOGS")
"""A folder: the producer and the pods log at info level into files there (where the time
goes: the load, the upload, each pod's download and open), else they log warnings only."""


def _pineapple(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "pineapple"
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "pineapple.cli"]
    return [*head, *args, "--log-level", "info" if LOGS else "warning"]


def _log_file(name: str) -> Any:
    """Where a process of the run writes its output: ``LOGS/name``, else a temporary file."""
    if LOGS:
        return open(Path(LOGS) / name, "w+b")
    return tempfile.TemporaryFile()


def _pod(url: str, cache: Path, port: int, extra: list[str], shared: Path) -> list[str]:
    return _pineapple(
        "serve",
        "--fleet",
        url,
        "--fleet-cache",
        str(cache),
        "--addr",
        f"127.0.0.1:{port}",
        "--shared-dir",
        str(shared),
        *extra,
    )


@contextlib.contextmanager
def _producer(config: Path, url: str, workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    with _log_file("producer.log") as log:
        cmd = _pineapple("publish", str(config), "--fleet", url, "--workdir", str(workdir))
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=log)
        try:
            yield proc
        finally:
            stop(proc, 30)


def _wait_for_config(url: str, seconds: float) -> None:
    """Until the producer published the fleet's config (after its first load of the table)."""
    store = open_store(url)
    try:
        deadline = time.monotonic() + seconds
        while store.get(CONFIG, CONFIG_KEY) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the producer published no config in {seconds:.0f} s")
            time.sleep(0.2)
    finally:
        store.close()


def _announced_at(url: str) -> float:
    """When the producer announced the table's newest generation (its announcement's time)."""
    store = open_store(url)
    try:
        _, announcement = announced(store, "feed")
        return announcement.time if announcement is not None else float("nan")
    finally:
        store.close()


def _serves_change(port: int, body: bytes) -> bool:
    with contextlib.suppress(OSError):
        status, answer = post(port, "/execute", body, timeout=5)
        return status == 200 and b"1.5" in answer
    return False


def _wait_all(ports: list[int], body: bytes, timeout: float) -> list[float | None]:
    """When each pod first answered with the change (``time.time()``), None: never."""
    seen: list[float | None] = [None] * len(ports)

    def watch(i: int, port: int, deadline: float) -> None:
        while time.monotonic() < deadline:
            if _serves_change(port, body):
                seen[i] = time.time()
                return
            time.sleep(POLL_SECONDS)

    deadline = time.monotonic() + timeout
    threads = [
        threading.Thread(target=watch, args=(i, p, deadline), daemon=True)
        for i, p in enumerate(ports)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return seen


def _change(table: str) -> tuple[float, str]:
    """Raise an online item's score to 1.5 (its ``updated_at`` to now, in ms: above every
    other) and bump the version; the commit's time and its category (the request that
    shows it)."""
    with contextlib.closing(connect()) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, category FROM `{table}` WHERE status = 'online' LIMIT 1")
        row = cur.fetchone()
        assert row is not None, "no online row"
        cur.execute(
            f"UPDATE `{table}` SET score = 1.5, updated_at = %s WHERE id = %s",
            (int(time.time() * 1000), row[0]),
        )
        cur.execute(f"UPDATE `{table}_v` SET v = v + 1")
        return time.time(), str(row[1])


def _pss(pid: int) -> Memory:
    return sum((memory(p.pid) for p in processes(pid)), Memory())


def fleet() -> list[Result]:
    """The five rows of the module docstring."""
    reason = unreachable() or nats_unavailable()
    names = (READS, PROPAGATION, SPREAD, RESTART, MEMORY)
    limits = (1.0, 1.0, 1.0, 1.0, 1.2)
    if reason:
        return [Result(35, n, None, lim, reason) for n, lim in zip(names, limits, strict=True)]
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pine-fleet-")))
        table = stack.enter_context(feed_table(ROWS, "f"))
        version = f"{table}_v"
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            cur.execute(f"CREATE TABLE `{version}` (v INT)")
            cur.execute(f"INSERT INTO `{version}` VALUES (1)")
        stack.callback(_drop, version)
        db = stack.enter_context(forwarder(str(MYSQL["host"]), int(MYSQL["port"])))
        nats = stack.enter_context(nats_server(free_port()))
        stats = stack.enter_context(contextlib.closing(connect()))
        stack.enter_context(userstat_on(stats))

        data = feed_config(table, interval=INTERVAL)
        params = data["resource_config"]["feed"]["params"]
        params["mysql_dsn"] = params["mysql_dsn"].replace(f":{MYSQL['port']})", f":{db.port})")
        params["version_query"] = f"SELECT v FROM `{version}`"
        # A change is read as a delta (the rows updated since the table held), merged into
        # a copy of it (docs/fleet.md, "The producer"); the scan still reads every row.
        params["delta_query"] = f"SELECT * FROM `{table}` WHERE updated_at > %(since)s"
        params["delta_column"] = "updated_at"
        # The producer reads straight into Arrow (connectorx), at normal priority: it
        # serves no request its loader could starve (docs/fleet.md, "The producer").
        params["loader"], params["loader_nice"] = "arrow", 0
        config = folder / "config.json"
        config.write_bytes(orjson.dumps(data))

        stack.enter_context(_producer(config, nats.url, folder / "producer"))
        _wait_for_config(nats.url, PRODUCER_START)
        ports = [free_port() for _ in PODS]
        pods = []
        for i, (extra, port) in enumerate(zip(PODS, ports, strict=True)):
            cmd = _pod(nats.url, folder / f"cache{i}", port, extra, folder / f"shm{i}")
            (folder / f"shm{i}").mkdir()
            log = stack.enter_context(_log_file(f"pod{i}.log"))
            pods.append(
                stack.enter_context(running(cmd, port, f"fleet pod {i}", timeout=600, log=log))
            )
        time.sleep(SETTLE_SECONDS)  # every pod has its first generation
        committed, category = _change(table)
        load = os.getloadavg()[0]  # the machine's 1-minute load when the change was made
        base = rows_read(stats, table)  # after the change's own reads of a few rows
        body = request_body(category)
        seen = _wait_all(ports, body, CHANGE_TIMEOUT)
        time.sleep(SETTLE_SECONDS)
        reads = (rows_read(stats, table) - base) / ROWS
        published = _announced_at(nats.url)
        served = [t for t in seen if t is not None]
        missing = len(seen) - len(served)
        invalid = f"{missing} pod(s) never served the change" if missing else None
        last = max(served) - committed if served else float("inf")
        spread = max(served) - min(served) if served else float("inf")

        pss_fleet = _pss(pods[0].pid)
        restart = _restart(stack, pods[0], nats, db, folder, ports[0], body)
        pss_source = _source_pss(data, body)  # while the table is there
    detail = (
        f"{ROWS:,} rows; load average {load:.1f}; published at +{published - committed:.2f} s;"
        " pods at +" + ", ".join("never" if t is None else f"{t - committed:.2f}" for t in seen)
    )
    return [
        Result(35, READS, reads, 1.0, f"{reads:g} full reads; {detail}", invalid),
        Result(35, PROPAGATION, last / (INTERVAL + 2), 1.0, f"{last:.2f} s; {detail}", invalid),
        Result(35, SPREAD, spread, 1.0, f"{spread:.2f} s", invalid),
        Result(35, RESTART, restart / 5.0, 1.0, f"{restart:.2f} s from the pod's start"),
        Result(
            35,
            MEMORY,
            pss_fleet.pss / pss_source.pss if pss_source.pss else None,
            1.2,
            f"consumer {pss_fleet.mib()} vs source {pss_source.mib()}",
        ),
    ]


def _restart(
    stack: contextlib.ExitStack,
    pod: subprocess.Popen[bytes],
    nats: NatsServer,
    db: Forwarder,
    folder: Path,
    port: int,
    body: bytes,
) -> float:
    """Stop pod 0, NATS and the database forwarder; start pod 0 again; seconds to serve."""
    pod.send_signal(signal.SIGTERM)
    pod.wait(60)
    nats.stop()
    db.stop()
    cmd = _pod(nats.url, folder / "cache0", port, list(PODS[0]), folder / "shm0")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.callback(stop, proc, 30)
    deadline = started + 60
    while time.monotonic() < deadline:
        if _serves_change(port, body):
            return time.monotonic() - started
        time.sleep(POLL_SECONDS)
    return float("inf")


def _source_pss(data: dict[str, Any], body: bytes) -> Memory:
    """PSS of ``serve CONFIG`` (one process) reading the table from MariaDB itself."""
    with tempfile.TemporaryDirectory(prefix="pine-fleet-src-") as folder:
        params = data["resource_config"]["feed"]["params"]
        params["mysql_dsn"] = params["mysql_dsn"].rsplit("@", 1)[0] + (
            f"@tcp({MYSQL['host']}:{MYSQL['port']})/{MYSQL['database']}"
        )
        config = Path(folder) / "config.json"
        config.write_bytes(orjson.dumps(data))
        port = free_port()
        with serve_pineapple(config, port, timeout=600) as proc:
            for _ in range(20):  # as the consumer pod was asked (bounded)
                post(port, "/execute", body)
            return _pss(proc.pid)


def _drop(version: str) -> None:
    with contextlib.closing(connect()) as conn, conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS `{version}`")
