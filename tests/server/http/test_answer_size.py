"""Issue 33, item 2: an answer has a size bound (``--max-answer-bytes``), and no request
can crash a process by asking for a huge one.

``transform_dispatch`` copies a common field onto every item: a 60 KB request asks for
a 175 MB answer, a 4 MB request with 1,000 items for a 4 GB one (which crashed the
process inside ``orjson.dumps``). Against a real ``pineapple serve`` in one process and
with ``--workers 2``: each is answered 507 naming the operator and the bound, fast,
the peak resident set of every serving process stays within :data:`GROWTH_BOUND`,
``/healthz`` answers meanwhile, and the same processes serve afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from .._modes import WORKERS, serving_pids, status_kib
from ..pod import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

MIB = 1024 * 1024
GROWTH_BOUND = 120 * MIB
"""Peak RSS growth allowed per serving process: the 4 MB bodies, their parse and the
507s (unbounded, the 60 KB request alone took one process to 487 MiB)."""
CONFIG: dict[str, Any] = {
    "pipeline_config": {
        "operators": {
            "dispatch": {
                "type_name": "transform_dispatch",
                "$metadata": {"common_input": ["blob"], "item_output": ["copy"]},
            }
        }
    },
    "pipeline_group": {"main": {"pipeline": ["dispatch"]}},
    "flow_contract": {"item_output": ["copy"]},
}


def _body(blob: int, items: int) -> bytes:
    return orjson.dumps({"common": {"blob": "x" * blob}, "items": [{}] * items})


SMALL = _body(50_000, 3_500)  # under --inline-body-bytes: the direct path
LARGE = _body(4_000_000, 1_000)  # the app path, on the worker threads


def _mode_name(server: Server) -> str:
    return "--workers 2" if server.supervised else "one process"


def test_a_copy_past_the_bound_is_507_fast_with_bounded_memory(
    serve: Callable[..., Server],
) -> None:
    assert len(SMALL) < 64 * 1024 < len(LARGE) < 8 * MIB
    server = serve(CONFIG, "--request-timeout-ms", "60000")  # a busy machine: no 504s
    pids = serving_pids(server.proc.pid, WORKERS[_mode_name(server)])
    idle = {pid: status_kib(pid, "VmRSS") * 1024 for pid in pids}
    done = threading.Event()
    health: list[tuple[int, float]] = []

    def probe() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            while not done.is_set():  # bounded: the requests below end (the test's timeout)
                started = time.monotonic()
                health.append((client.get("/healthz").status_code, time.monotonic() - started))

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    answers: list[tuple[int, dict[str, Any], float]] = []
    lock = threading.Lock()

    def ask(body: bytes) -> None:
        started = time.monotonic()
        reply = httpx.post(f"{server.url}/execute", content=body, timeout=60)
        with lock:
            answers.append((reply.status_code, reply.json(), time.monotonic() - started))

    try:
        askers = [threading.Thread(target=ask, args=(b,)) for b in [SMALL, LARGE] * 3]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join(120)
            assert not asker.is_alive()
    finally:
        done.set()
        prober.join(30)
    assert len(answers) == 6
    for status, answer, took in answers:
        assert status == 507, answer
        assert answer["error"].startswith('answer too large: operator "dispatch" would make it')
        assert answer["error"].endswith("more than the limit of 67,108,864 bytes")
        assert took < 10.0
    assert health and all(code == 200 and took < 2.0 for code, took in health), health
    peaks = {pid: status_kib(pid, "VmHWM") * 1024 for pid in pids}
    growth = {pid: peaks[pid] - idle[pid] for pid in pids}
    print({pid: f"{idle[pid] / MIB:.0f} -> {peaks[pid] / MIB:.0f} MiB" for pid in pids})
    assert all(g < GROWTH_BOUND for g in growth.values()), growth
    # The same processes serve on: none crashed, none was replaced.
    assert serving_pids(server.proc.pid, len(pids)) == pids
    ok = httpx.post(f"{server.url}/execute", content=_body(10, 3), timeout=30)
    assert ok.status_code == 200 and ok.json()["items"] == [{"copy": "x" * 10}] * 3


def test_the_bound_is_a_serve_flag(serve: Callable[..., Server]) -> None:
    server = serve(CONFIG, "--max-answer-bytes", "0")  # 0: no bound
    big = httpx.post(f"{server.url}/execute", content=_body(20_000, 1_000), timeout=60)
    assert big.status_code == 200 and len(big.content) > 20_000_000
    server.close()
    server = serve(CONFIG, "--max-answer-bytes", "1000")
    small = httpx.post(f"{server.url}/execute", content=_body(100, 20), timeout=30)
    assert small.status_code == 507
    assert small.json()["error"].endswith("more than the limit of 1,000 bytes")
