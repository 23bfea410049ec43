"""``/metrics`` and ``/stats`` answer for the whole server, in one process and with ``--workers 2``.

Every test runs against a real ``pineapple serve`` from one parametrised
fixture with the same expected answers: counters count every request
whichever process served it, on every scrape; they never go backwards across a
worker's ``kill -9``; every process exports ``process_*``. The same server
reads two plugin types over HTTP from a loopback source: one without a codec
(each serving process fetches it, the supervisor never) and one with a codec
(fetched once for the pod).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..._serve import ROOT, Serve
from ..pod import serve_plugin
from ..workers.test_shared_workers import serving_two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

DEADLINE = 30.0  # several Python processes start on a busy 2-core machine
EXECUTE = 'pineapple_http_requests_total{method="POST",route="/execute",status="200"}'
DETAIL = 'pineapple_http_requests_total{method="GET",route="/resources/{name}",status="200"}'
RUNS = "pine_scheduler_runs_total"
FETCHED = '{resource="candidates",result="swapped",type="json_file"}'


class _Source:
    """A loopback HTTP source that records which process asked, and when."""

    def __init__(self) -> None:
        self.gets: list[tuple[str, int, float]] = []  # (path, pid, monotonic time)
        self._lock = threading.Lock()
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with source._lock:
                    pid = int(self.headers.get("X-Pineapple-Pid", "0"))
                    source.gets.append((self.path, pid, time.monotonic()))
                body = json.dumps({"path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def fetchers(self, path: str, since: float = 0.0) -> dict[int, int]:
        """``pid -> GETs of path`` since ``since``."""
        with self._lock:
            counts: dict[int, int] = {}
            for got, pid, at in self.gets:
                if got == path and at >= since:
                    counts[pid] = counts.get(pid, 0) + 1
            return counts

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Pod:
    """One serving ``pineapple serve`` and what a test needs to know of its processes."""

    server: Serve
    mode: str
    store: Path | None
    source: _Source

    @property
    def main_pid(self) -> int:
        """The process that fetches shared types: the supervisor, or the one process."""
        return self.server.proc.pid

    def serving_pids(self) -> set[int]:
        if self.mode == "one":
            return {self.server.proc.pid}
        return {p.pid for p in self.server.workers()}

    def processes(self) -> int:
        return 1 if self.mode == "one" else 3  # the supervisor and two workers


def _config(tmp_path: Path, source: _Source) -> Path:
    shutil.copytree(ROOT / "configs" / "data", tmp_path / "data")
    config = json.loads((ROOT / "configs" / "demo.json").read_text())
    config["resource_config"]["own_http"] = {
        "type": "test_http_json",
        "interval": 1,
        "params": {"url": f"{source.url}/own"},
    }
    config["resource_config"]["shared_http"] = {
        "type": "test_http_json_shared",
        "interval": 1,
        "params": {"url": f"{source.url}/shared"},
    }
    path = tmp_path / "pineapple.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(params=["one", "workers"])
def pod(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pod]:
    """``pineapple serve`` of the demo config plus two HTTP resources, in either mode."""
    source = _Source()
    config = _config(tmp_path, source)
    try:
        if request.param == "one":
            with serve_plugin(config, tmp_path / "closes.log") as server:
                yield Pod(server, "one", None, source)
        else:
            with serving_two_workers(config, tmp_path) as (server, shared):
                pod = Pod(server, "workers", shared, source)
                _wait(lambda: len(pod.serving_pids()) == 2, "two workers")
                yield pod
    finally:
        source.close()


def _wait(ok: Any, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if ok():
            return
        time.sleep(0.05)  # polling other processes' state, with a deadline
    raise AssertionError(f"never {what}")


def _scrape(pod: Pod) -> str:
    # A new connection each time: the kernel hands it to any worker accepting.
    response = httpx.get(f"{pod.server.url}/metrics", timeout=10)
    assert response.status_code == 200
    return response.text


def _value(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _rss_pids(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("process_resident_memory_bytes")]
    return [m.group(1) if (m := re.search(r'pid="(\d+)"', r)) else "" for r in rows]


def _execute(pod: Pod, k: int) -> None:
    for _ in range(k):
        body = {"common": {"user_id": "demo"}, "items": []}
        response = httpx.post(f"{pod.server.url}/execute", json=body, timeout=10)
        assert response.status_code == 200, response.text


def _details(pod: Pod, k: int) -> set[int]:
    """``k`` status reads, each on a new connection; the pids that answered."""
    answered = set()
    for _ in range(k):
        response = httpx.get(f"{pod.server.url}/resources/candidates", timeout=10)
        assert response.status_code == 200, response.text
        answered.add(response.json()["worker"])
    return answered


def test_every_scrape_counts_every_process_work(pod: Pod) -> None:
    answered: set[int] = set()
    k = 0
    _execute(pod, 20)
    # Until every serving process has answered some (bounded: at most 10 rounds of 10).
    for _ in range(10):
        answered |= _details(pod, 10)
        k += 10
        if answered >= pod.serving_pids():
            break
    assert answered == pod.serving_pids()
    _wait(lambda: _value(_scrape(pod), DETAIL) == k, f"{k} status reads counted")
    for _ in range(8):  # any process answers each: every one counts them all
        text = _scrape(pod)
        assert _value(text, EXECUTE) == 20
        assert _value(text, RUNS) == 20
        assert _value(text, DETAIL) == k
    stats = httpx.get(f"{pod.server.url}/stats", timeout=10).json()
    assert stats["scheduler"]["run_count"] == 20
    assert stats["http"]["requests_total"]["POST /execute 2xx"] == 20
    assert stats["operators"]["recall_candidates"]["exec_count"] == 20
    assert list(stats)[:4] == ["operators", "scheduler", "server", "http"]


def test_every_process_exports_process_metrics(pod: Pod) -> None:
    want = pod.processes()
    _wait(lambda: len(_rss_pids(_scrape(pod))) == want, f"process_* of {want} process(es)")
    text = _scrape(pod)
    pids = _rss_pids(text)
    if pod.mode == "one":
        assert pids == [""]  # one process: no pid label
    else:
        assert {int(p) for p in pids} == {pod.main_pid, *pod.serving_pids()}
    assert _value(text, "process_cpu_seconds_total") > 0
    assert "process_open_fds" in text


@pytest.mark.parametrize("pod", ["workers"], indirect=True)
def test_counters_never_go_backwards_across_a_worker_kill(pod: Pod) -> None:
    _execute(pod, 30)
    _wait(lambda: _value(_scrape(pod), EXECUTE) == 30, "30 requests counted")
    victim = min(pod.serving_pids())
    os.kill(victim, signal.SIGKILL)
    seen = [30.0]

    def replaced() -> bool:
        seen.append(_value(_scrape(pod), EXECUTE))
        pids = pod.serving_pids()
        return len(pids) == 2 and victim not in pids

    _wait(replaced, "the killed worker replaced")
    assert seen == sorted(seen) and seen[-1] == 30, seen  # never backwards, nothing lost
    _execute(pod, 10)
    _wait(lambda: _value(_scrape(pod), EXECUTE) == 40, "40 requests counted")
    for _ in range(6):
        assert _value(_scrape(pod), EXECUTE) == 40
    assert pod.store is not None
    (metrics,) = pod.store.glob("*/metrics")
    names = sorted(p.name for p in metrics.iterdir())
    assert not [n for n in names if str(victim) in n], names  # folded into the archive
    assert "counter_dead.db" in names
    assert len(names) <= 5 * 3 + 4 + 1  # live processes' files, the archive, the lock


def test_an_unshared_type_is_fetched_by_each_serving_process_never_by_the_supervisor(
    pod: Pod,
) -> None:
    serving = pod.serving_pids()
    _wait(lambda: set(pod.source.fetchers("/own")) >= serving, "every process fetched /own")
    since = time.monotonic()
    _wait(lambda: time.monotonic() - since > 3.0, "three refresh intervals")
    window = time.monotonic() - since
    own = pod.source.fetchers("/own", since)
    shared = pod.source.fetchers("/shared", since)
    assert set(own) == serving  # the supervisor (workers mode) never fetches it
    assert set(shared) == {pod.main_pid}  # a type with a codec: once for the pod
    for counts in (own, shared):  # once per interval (1 s) each, at most
        assert all(n <= window + 2 for n in counts.values()), counts
    status = httpx.get(f"{pod.server.url}/resources/shared_http", timeout=10).json()
    assert status["status"]["summary"] == f"http_json: {len(json.dumps({'path': '/shared'}))} bytes"
    assert status["status"]["last_error"] is None
    log = "".join(pod.server.log)
    assert "size_of failed" not in log
    if pod.mode == "workers":
        # candidates, item_ctr and shared_http; own_http is each worker's
        assert "published 3 shared resource(s)" in log
    with contextlib.suppress(Exception):
        pod.server.stop()


def test_a_shared_fetch_and_a_config_reload_are_counted_once(pod: Pod, tmp_path: Path) -> None:
    fetched = "pineapple_resource_refreshes_total" + FETCHED
    reloaded = 'pineapple_config_reloads_total{result="ok"}'
    _wait(lambda: _value(_scrape(pod), fetched) == 1, "the first fetch of candidates counted")
    config = tmp_path / "pineapple.json"
    data = json.loads(config.read_text())
    data["_PINEAPPLE_CREATE_TIME"] = "changed"  # a new config; every entry unchanged
    config.write_text(json.dumps(data))
    _wait(lambda: _value(_scrape(pod), reloaded) == 1, "the reload counted")
    for _ in range(8):  # whichever process answers: one reload, one source read
        text = _scrape(pod)
        assert _value(text, reloaded) == 1
        assert _value(text, fetched) == 1  # carried over by the reload, not read again
    stats = httpx.get(f"{pod.server.url}/stats", timeout=10).json()
    assert stats["server"]["reload_count"] == 1
