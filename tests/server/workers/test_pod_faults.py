"""A bad config or a failing worker never ends the pod (real ``pineapple serve`` processes).

Each test starts the real server, one process and ``--workers 2`` from one
parametrised fixture where the fault exists in both, and drives the fault
for real: a Redis port nobody listens on, a resource that cannot start, a
SIGSTOPped worker. Every wait has a deadline; the tests have timeouts.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from server.workers._liveness import LIVENESS_TIMEOUT_SECONDS
from server.workers.supervisor._supervisor import restart_delay

from ..._serve import LISTENING
from ..pod import serve_plugin
from .test_shared_workers import _config, _fill, _recall, _wait_workers

pytestmark = pytest.mark.e2e

DEADLINE = 30.0  # generous: several Python processes start on a busy 2-core machine
MODES = {"one process": (), "--workers 2": ("--workers", "2")}


class Pod:
    """A serving ``pineapple serve`` (one process or a supervisor), its config and store."""

    def __init__(self, mode: str, tmp_path: Path, config: dict[str, Any]) -> None:
        self.mode = mode
        self.db = tmp_path / "feed.db"
        self.config_path = tmp_path / "pineapple.json"
        self.shared = tmp_path / "shm"
        self.shared.mkdir()
        self.write(config)
        args = ("--no-watch", *MODES[mode])
        if mode != "one process":
            args = (*args, "--shared-dir", str(self.shared))
        self.server = serve_plugin(self.config_path, tmp_path / "closes.log", *args)
        self.processes = 2 if mode != "one process" else 1

    @property
    def url(self) -> str:
        return self.server.url

    def write(self, config: dict[str, Any]) -> bytes:
        raw = json.dumps(config).encode()
        self.config_path.write_bytes(raw)
        return raw

    def serving_pids(self) -> set[int]:
        """The processes that answer requests (the server itself, or every worker)."""
        if self.processes == 1:
            return {self.server.proc.pid}
        return _wait_workers(self.server, self.processes)

    def last_reload(self, body: dict[str, Any]) -> dict[str, Any]:
        """The reload outcome ``GET /config`` reports for the whole pod."""
        if self.processes == 1:
            outcome: dict[str, Any] = body["last_reload"]
        else:  # the supervisor decides reloads: its outcome, as every worker shows it
            outcome = body["shared"]["supervisor_last_reload"]
        return outcome

    def close(self) -> None:
        self.server.close()


def _feed_config(db: Path) -> dict[str, Any]:
    config = _config(db)
    config["resource_config"]["feed"]["interval"] = 600  # only the test's reloads act
    return config


@pytest.fixture(params=list(MODES))
def pod(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pod]:
    _fill(tmp_path / "feed.db", 0, 30)
    served = Pod(request.param, tmp_path, _feed_config(tmp_path / "feed.db"))
    try:
        yield served
    finally:
        served.close()


def _closed_port() -> int:
    """A loopback port nobody listens on (bound once by the kernel, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.timeout(180)
def test_a_reload_no_worker_can_build_is_refused_and_the_last_good_config_serves(
    pod: Pod,
) -> None:
    pids = pod.serving_pids()
    want = _recall(pod.server)
    _fill(pod.db, 30, 33)  # new rows, read by the reload below (never by a refresh: 600 s)
    port = _closed_port()
    bad = _feed_config(pod.db)
    # Only its interval changes: the feed is fetched again (same entry key, new rows), but
    # nothing of the refused config may serve.
    bad["resource_config"]["feed"]["interval"] = 300
    bad["resource_config"]["cache"] = {
        "type": "redis_connection",
        "interval": -1,
        "params": {"addr": f"127.0.0.1:{port}", "ping_at_start": True},
    }
    digest = hashlib.sha256(pod.write(bad)).hexdigest()
    response = httpx.post(f"{pod.url}/admin/reload", timeout=DEADLINE + 60)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert (answer["result"], answer["step"], answer["content_hash"]) == ("error", "start", digest)
    assert answer["error"].startswith("start: ") and f"127.0.0.1:{port}" in answer["error"]
    # /config says the same in every process that answers, and the last good config serves.
    for _ in range(10):  # a new connection each time: any worker may answer
        config = httpx.get(f"{pod.url}/config", timeout=10).json()
        shown = pod.last_reload(config)
        assert (shown["result"], shown["step"], shown["error"]) == (
            "error",
            "start",
            answer["error"],
        )
        assert _recall(pod.server) == want
    # Nothing restarted and nothing gave up: the same processes serve, the port is open.
    assert pod.serving_pids() == pids
    assert pod.server.proc.poll() is None
    assert not [line for line in pod.server.log if "exited with" in line], pod.server.log
    # Writing the served config back: it is what serves, so nothing is reloaded.
    good = pod.write(_feed_config(pod.db))
    response = httpx.post(f"{pod.url}/admin/reload", timeout=DEADLINE + 60)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "unchanged"
    assert response.json()["content_hash"] == hashlib.sha256(good).hexdigest()
    assert _recall(pod.server) == want


_EXIT = re.compile(
    r"^(\S+ \S+) .*pineapple-worker-\d \(pid (\d+)\) exited with \S+ after \S+; "
    r"starting it again in ([\d.]+)s \(exit (\d+) in a row\)"
)


def _exits(log: list[str]) -> list[tuple[float, int, float, int]]:
    """``(time, pid, delay, exits in a row)`` of each worker exit the supervisor logged."""
    found = []
    for line in list(log):
        match = _EXIT.search(line)
        if match:
            at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            found.append((at, int(match.group(2)), float(match.group(3)), int(match.group(4))))
    return found


@pytest.mark.timeout(420)  # six failing starts of a new interpreter, 31.5 s of backoff
def test_a_worker_that_cannot_start_is_restarted_with_backoff_while_the_pod_serves(
    tmp_path: Path,
) -> None:
    _fill(tmp_path / "feed.db", 0, 30)
    marker = tmp_path / "source-down"
    config = _feed_config(tmp_path / "feed.db")
    config["resource_config"]["extra"] = {  # per worker: each worker fetches its own
        "type": "test_items",
        "interval": -1,
        "params": {"label": "extra", "items": [], "fail_if_exists": str(marker)},
    }
    pod = Pod("--workers 2", tmp_path, config)
    try:
        pids = pod.serving_pids()
        want = _recall(pod.server)
        marker.touch()  # from now on no new worker can start
        victim, survivor = sorted(pids)
        os.kill(victim, signal.SIGKILL)
        # Six exits in a row of one slot (the old limit gave up after five a minute).
        end = time.monotonic() + 300
        while len(_exits(pod.server.log)) < 6:  # bounded: the deadline
            assert time.monotonic() < end, "".join(pod.server.log)
            assert pod.server.proc.poll() is None, "the supervisor gave up"
            asked = time.time()
            try:
                got = _recall(pod.server)
            except httpx.TransportError as exc:  # say what the pod was doing then
                stamp = datetime.fromtimestamp(asked).strftime("%H:%M:%S,%f")[:-3]
                pytest.fail(f"/execute asked at {stamp} failed: {exc!r}\n{''.join(pod.server.log)}")
            assert got == want  # the other worker serves throughout
            time.sleep(0.2)  # polling another process's state, with a deadline
        exits = _exits(pod.server.log)[:6]
        assert [e[3] for e in exits] == [1, 2, 3, 4, 5, 6]
        assert [e[2] for e in exits] == [restart_delay(n) for n in range(1, 7)]
        assert [e[2] for e in exits] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
        for before, after in itertools.pairwise(exits):  # each waited its delay
            assert after[0] - before[0] >= before[2] - 0.01, (before, after)
        assert survivor not in {e[1] for e in exits}
        assert {p.pid for p in pod.server.workers()} >= {survivor}
        marker.unlink()  # the source is back: the next restart serves
        # Two listened at the start; the third line is the new worker's.
        pod.server.wait_line(LISTENING, restart_delay(6) + DEADLINE, times=3)
        assert len({p.pid for p in pod.server.workers()}) == 2
        assert _recall(pod.server) == want
        assert pod.server.proc.poll() is None
    finally:
        pod.close()


_RELOADED = re.compile(
    r"^\S+ \S+ (\d+) INFO pineapple\.server: config ([0-9a-f]+) reloaded \(supervisor\)"
)


def _wait_reloaded(pod: Pod, pids: set[int], content_hash: str) -> None:
    """Wait until each worker of ``pids`` logged that it serves config ``content_hash``.

    Read from the log, not over HTTP: which worker a fresh connection reaches is
    the kernel's choice (one shared listening socket), so HTTP cannot ask each one.
    """
    end = time.monotonic() + DEADLINE
    while True:  # bounded: the deadline
        done = set()
        for line in list(pod.server.log):
            match = _RELOADED.search(line)
            if match and content_hash.startswith(match.group(2)):
                done.add(int(match.group(1)))
        if pids <= done:
            return
        assert time.monotonic() < end, f"{pids - done} did not reload:\n{''.join(pod.server.log)}"
        time.sleep(0.2)  # polling another process's log, with a deadline


def _store_files(shared: Path) -> int:
    (store,) = shared.iterdir()
    return sum(1 for _ in store.iterdir())


@pytest.mark.timeout(240)
def test_a_stopped_worker_is_killed_and_replaced_and_the_store_stays_bounded(
    tmp_path: Path,
) -> None:
    _fill(tmp_path / "feed.db", 0, 30)
    pod = Pod("--workers 2", tmp_path, _feed_config(tmp_path / "feed.db"))
    try:
        pids = pod.serving_pids()
        baseline = _store_files(pod.shared)
        victim = psutil.Process(min(pids))
        victim.suspend()  # SIGSTOP: it keeps its lease on the config generation it serves
        stopped = time.monotonic()
        grown, n = baseline, 0
        # Reloads that each drop the feed's entry (a new version query: a new entry key).
        # Bounded: until the stopped worker is gone, at most LIVENESS_TIMEOUT + DEADLINE.
        while victim.is_running() and victim.status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() - stopped < LIVENESS_TIMEOUT_SECONDS + DEADLINE
            n += 1
            config = _feed_config(pod.db)
            config["resource_config"]["feed"]["params"]["version_query"] = (
                f"SELECT COUNT(*) + {n} FROM items"
            )
            pod.write(config)
            response = httpx.post(f"{pod.url}/admin/reload", timeout=DEADLINE)
            assert response.status_code == 200, response.text
            grown = max(grown, _store_files(pod.shared))
        gone_after = time.monotonic() - stopped
        assert gone_after >= LIVENESS_TIMEOUT_SECONDS - 1, gone_after
        assert gone_after <= LIVENESS_TIMEOUT_SECONDS + DEADLINE
        assert grown > baseline + 5, (baseline, grown, n)  # the stopped worker held them
        assert any(f"(pid {victim.pid}) has not beaten for" in line for line in pod.server.log), (
            pod.server.log
        )
        # A new worker takes its place, and the store shrinks back once no one holds the
        # dropped entries (the sweep runs every 0.5 s).
        end = time.monotonic() + DEADLINE
        while len(pod.server.workers()) < 2 or _store_files(pod.shared) > baseline:
            assert time.monotonic() < end, (_store_files(pod.shared), baseline)
            time.sleep(0.1)  # polling another process's state, with a deadline
        assert _recall(pod.server) == _recall(pod.server)
        assert pod.server.proc.poll() is None
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(min(pids)).resume()
        pod.close()


def _items(label: str, marker: Path | None = None) -> dict[str, Any]:
    """A per-worker ``test_items`` entry; its fetch fails while ``marker`` exists."""
    params = {"label": label, "items": [], "fail_if_exists": str(marker) if marker else ""}
    return {"type": "test_items", "interval": -1, "params": params}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", list(MODES))
def test_a_reload_carries_unchanged_per_worker_values_over_while_their_source_is_down(
    mode: str, tmp_path: Path
) -> None:
    _fill(tmp_path / "feed.db", 0, 30)
    marker = tmp_path / "source-down"
    config = _feed_config(tmp_path / "feed.db")
    config["resource_config"]["extra"] = _items("extra", marker)
    pod = Pod(mode, tmp_path, config)
    try:
        pids = pod.serving_pids()
        marker.touch()  # fetching "extra" again would fail now; its served value is fine
        config["resource_config"]["feed"]["interval"] = 300  # a shared entry changes
        pod.write(config)
        response = httpx.post(f"{pod.url}/admin/reload", timeout=DEADLINE + 60)
        assert response.status_code == 200 and response.json()["result"] == "ok", response.text
        config["resource_config"]["more"] = _items("more")  # a new per-worker entry too
        pod.write(config)
        response = httpx.post(f"{pod.url}/admin/reload", timeout=DEADLINE + 60)
        assert response.status_code == 200 and response.json()["result"] == "ok", response.text
        if mode != "one process":  # every worker says it serves the new config
            _wait_reloaded(pod, pids, response.json()["content_hash"])
        for _ in range(4):  # whichever process answers has both, never failed
            for name in ("extra", "more"):
                body = httpx.get(f"{pod.url}/resources/{name}", timeout=10).json()
                assert body["status"]["consecutive_failures"] == 0, body
                assert int(body["worker"]) in pids, body
        assert pod.serving_pids() == pids  # nothing restarted
    finally:
        pod.close()
