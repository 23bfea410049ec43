"""Issue 21, item 8: 16 unauthenticated 8 MB bodies of ``{}`` items cannot balloon a pod.

A real ``pineapple serve`` (one process, and ``--workers 2``, from one
parametrised fixture) gets 16 such bodies at once, each far over
``--max-items``. Each is answered 413 (or 503 when the in-flight bytes cap,
which now counts parsed objects too, is reached) and the peak resident set of
every serving process (``VmHWM`` in ``/proc/PID/status``) grows by less than
:data:`GROWTH_BOUND`. Before the item count was enforced while parsing, the same
load took one process from 112 to 1,424 MiB.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from .._modes import MODES, WORKERS, serving, serving_pids, status_kib

pytestmark = pytest.mark.e2e

CLIENTS = 16
BODY = b'{"common":{},"items":[' + b",".join([b"{}"] * 2_700_000) + b"]}"  # 8.1 MB
MIB = 1024 * 1024
GROWTH_BOUND = 400 * MIB
"""Peak RSS growth allowed per serving process: the 16 raw bodies (130 MiB) and their
reassembly, plus what the capped parses build (about 12 MiB each)."""


@pytest.mark.parametrize("mode", MODES)
def test_sixteen_item_floods_stay_within_the_memory_bound(mode: str, tmp_path: Path) -> None:
    assert len(BODY) < 8 * MIB
    with serving(mode, tmp_path) as server:
        pids = serving_pids(server.proc.pid, WORKERS[mode])
        idle = {pid: status_kib(pid, "VmRSS") * 1024 for pid in pids}
        start = threading.Barrier(CLIENTS)
        statuses: list[int] = []
        errors: list[str] = []

        def flood() -> None:
            start.wait(30)
            try:
                reply = httpx.post(f"{server.url}/execute", content=BODY, timeout=120)
                statuses.append(reply.status_code)
            except httpx.HTTPError as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
            assert not thread.is_alive()
        peaks = {pid: status_kib(pid, "VmHWM") * 1024 for pid in pids}
        growth = {pid: peaks[pid] - idle[pid] for pid in pids}
        print({pid: f"{idle[pid] / MIB:.0f} -> {peaks[pid] / MIB:.0f} MiB" for pid in pids})
        assert errors == []
        assert len(statuses) == CLIENTS and set(statuses) <= {413, 503}, statuses
        assert statuses.count(413) >= 1, statuses
        assert all(g < GROWTH_BOUND for g in growth.values()), growth
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize("mode", MODES)
def test_a_parse_that_would_pass_the_in_flight_cap_is_refused(mode: str, tmp_path: Path) -> None:
    # One item holding 2.7 million empty lists: 8.1 MB that no item count stops, ~170 MB
    # once parsed; its raw bytes fit a 64 MiB cap, its parsed objects do not.
    nested = b'{"common":{},"items":[{"a":[' + b",".join([b"[]"] * 2_700_000) + b"]}]}"
    small = b'{"common":{},"items":[' + b",".join([b'{"id":"x"}'] * 20_000) + b"]}"  # 220 KB
    with serving(mode, tmp_path, "--max-inflight-body-bytes", str(64 * MIB)) as server:
        reply = httpx.post(f"{server.url}/execute", content=nested, timeout=60)
        assert reply.status_code == 503 and "server busy" in reply.json()["error"], reply.text
        # A large body whose parse fits is served; nothing stayed reserved.
        for _ in range(3):
            assert httpx.post(f"{server.url}/execute", content=small, timeout=60).status_code == 200
