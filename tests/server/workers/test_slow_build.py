"""Issue 33, item 6: a slow build never takes a workers pod down.

A reload adds ``test_slow_build`` (``process_plugin``), an operator whose
construction holds in chosen processes only. While every process that
answers builds it (held at a gate), the pod keeps answering ``/execute`` and
``/readyz`` from the last generation and no worker is replaced (one process
and ``--workers 2``, the same expectations). With ``--workers 2``, a build
that a trial worker cannot finish within ``--build-timeout-seconds`` is
refused like any bad reload, and a generation the workers fail to build
(though a trial built it) leaves them serving the one they have: no worker
restarts, never all down at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from ..pod import MODES, PLUGIN, WAIT, Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

_META = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id", "score"]}
_ASKED = 12
"""New connections per check (the kernel hands each to whichever worker accepts)."""


def _config(feed: Path, slow: dict[str, Any] | None = None) -> dict[str, Any]:
    recall = {"type_name": "recall_resource", "resource_name": "feed", "$metadata": _META}
    operators: dict[str, Any] = {"recall": recall}
    if slow is not None:
        operators["slow"] = {"type_name": "test_slow_build", **slow, "$metadata": {}}
    return {
        "_PINEAPPLE_VERSION": 1,
        "resource_config": {
            "feed": {"type": "json_file", "interval": -1, "params": {"path": str(feed)}}
        },
        "pipeline_config": {"operators": operators},
        "pipeline_group": {"main": {"pipeline": list(operators)}},
        "flow_contract": {**_META, "item_input": []},
    }


def _pids(server: Server) -> set[int]:
    return {p.pid for p in server.workers()} if server.supervised else {server.proc.pid}


def _answers_everything(server: Server) -> None:
    """``/execute`` (the one row) and ``/readyz`` answer 200 on ``_ASKED`` new connections."""
    for _ in range(_ASKED):
        done = httpx.post(f"{server.url}/execute", content=b'{"common":{},"items":[]}')
        assert done.status_code == 200 and done.json()["items"] == [{"id": 1, "score": 1}]
        ready = httpx.get(f"{server.url}/readyz")
        assert ready.status_code == 200, ready.text


class _Census:
    """Counts, every 20 ms on a thread, how many of the pod's first processes still run
    (a trial process comes and goes beside them): the fewest seen."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self.first = _pids(server)
        self._stop = threading.Event()
        self.fewest = len(self.first)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):  # bounded: until stopped
            self.fewest = min(self.fewest, len(self.first & _pids(self._server)))

    @classmethod
    @contextlib.contextmanager
    def of(cls, server: Server) -> Iterator[_Census]:
        census = cls(server)
        census._thread.start()
        try:
            yield census
        finally:
            census._stop.set()
            census._thread.join(5)

    def none_replaced(self) -> None:
        """Every first process ran throughout, and the log says no worker was restarted."""
        assert self.fewest == len(self.first), f"{self.fewest} of {self.first} at the worst"
        assert self._server.count("killing it") == 0, self._server.text()
        assert self._server.count("exited with") == 0, self._server.text()


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    path = tmp_path / "feed.json"
    path.write_bytes(orjson.dumps([{"id": 1, "score": 1.0}]))
    return path


def test_the_pod_answers_while_every_process_builds(
    serve: Callable[..., Server], feed: Path, tmp_path: Path
) -> None:
    server = serve(_config(feed), "--plugin", PLUGIN)
    pids = _pids(server)
    gate = tmp_path / "go"
    hold_in = "pineapple-worker" if server.supervised else "MainProcess"
    config = _config(feed, {"hold_in": hold_in, "gate": str(gate)})
    with _Census.of(server) as census:
        server.config.write_bytes(orjson.dumps(config))
        server.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + WAIT
        while not all(Path(f"{gate}.{pid}").exists() for pid in pids):  # every process builds
            assert time.monotonic() < end, "not every process began the build"
            time.sleep(0.05)  # polling files other processes write, with a deadline
        _answers_everything(server)  # from the last generation, while the builds are held
        gate.touch()
        server.wait_line(r"config \w+ reloaded", WAIT, times=len(pids) if server.supervised else 1)
    _answers_everything(server)
    census.none_replaced()


@pytest.fixture
def pod(feed: Path, tmp_path: Path) -> Iterator[Server]:
    path = tmp_path / "pineapple.json"
    path.write_bytes(orjson.dumps(_config(feed)))
    state = ("--state-dir", str(tmp_path / "state"))
    args = ("--plugin", PLUGIN, "--build-timeout-seconds", "3", *state)
    server = Server(path, *args, mode=MODES["--workers 2"])
    try:
        yield server
    finally:
        server.close()


def test_a_build_workers_cannot_finish_in_time_is_refused(pod: Server, feed: Path) -> None:
    with _Census.of(pod) as census:
        # Slow in the trial and in workers alike: 6 s, over --build-timeout-seconds 3.
        refused = pod.reload(_config(feed, {"hold_in": "pineapple-", "seconds": 6.0}))
        _answers_everything(pod)
    body = refused.json()
    assert body["result"] == "error", body
    assert "over the 3s a worker may take (--build-timeout-seconds)" in body["error"], body
    census.none_replaced()
    # A build within the bound is accepted, after the refused one.
    accepted = pod.reload(_config(feed, {"hold_in": "pineapple-", "seconds": 0.1}))
    assert accepted.json()["result"] == "ok", accepted.text
    _answers_everything(pod)


def _generations(server: Server) -> dict[int, int]:
    """``worker pid -> config generation it serves``, asked until every worker answered."""
    seen: dict[int, int] = {}
    pids = _pids(server)
    end = time.monotonic() + WAIT
    while not pids <= set(seen):  # bounded by the deadline
        assert time.monotonic() < end, f"workers {pids - set(seen)} never answered"
        shared = httpx.get(f"{server.url}/config", timeout=WAIT).json()["shared"]
        seen[shared["pid"]] = shared["config_generation"]
    return seen


def test_workers_that_cannot_build_an_accepted_generation_roll_the_pod_back(
    pod: Server, feed: Path
) -> None:
    first = pod.http.get("/config").json()["config"]["revision"]
    with _Census.of(pod) as census:
        # A trial builds it; every worker fails to: each keeps the generation it serves,
        # and the supervisor takes the pod back to the config before it (generation 3).
        accepted = pod.reload(_config(feed, {"fail_in": "pineapple-worker"}))
        assert accepted.json()["result"] == "ok", accepted.text
        pod.wait_line("cannot build config generation 2", WAIT, times=2)
        _answers_everything(pod)
        pod.wait_line("went back to the previous config as generation 3", WAIT)
        end = time.monotonic() + WAIT
        while set(_generations(pod).values()) != {3}:
            assert time.monotonic() < end, "the pod never served generation 3"
            time.sleep(0.05)  # polling what other processes serve, with a deadline
        _answers_everything(pod)
    census.none_replaced()  # none restarted, never all down
    assert pod.count("went back to the previous config") == 1  # once, whoever reported it
    answered = httpx.get(f"{pod.url}/config", timeout=WAIT).json()
    last = answered["last_reload"]
    assert last["result"] == "error" and "test_slow_build cannot be built" in last["error"]
    # The history says so: the first config is current again, by an automatic rollback
    # naming why, and it is the revision every worker serves.
    history = pod.http.get("/config/history").json()
    current, failed = history["revisions"]  # the first config moved back to the top
    assert (current["trigger"], failed["trigger"]) == ("auto_rollback", "admin"), history
    assert current["revision"] == first == history["serving"] and history["pinned"] is None
    assert failed["revision"] == last["content_hash"][:12] and failed["reason"] is None
    assert current["reason"] == last["error"] and "generation 2" in current["reason"]
    for _ in range(_ASKED):  # new connections: whichever worker answers serves it
        assert httpx.get(f"{pod.url}/config").json()["config"]["revision"] == first
    # An admin reload may retry the bytes that failed (a trial builds them again).
    again = pod.http.post("/admin/reload")
    assert again.json()["result"] == "ok", again.text
