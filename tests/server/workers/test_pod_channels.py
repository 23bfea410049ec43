"""Nothing a config or a client sends can break the pod's own channels (real processes,
one process and ``--workers 2``, the ``serve`` fixture's two params):

- a refused config whose error would be 1.2 MB or 60 KB: the reload is refused with a
  bounded error, ``/readyz`` stays 200, the manifest stays small, a good reload works
  afterwards and a killed worker starts again;
- a flood of unauthenticated ``GET /resources`` and ``/config``: every ``/readyz`` 200;
- 150 shared resources (a status over the control channel's 64 KiB): ``/resources`` 200;
- ``/metrics`` while every flush fails (a real ``EFBIG`` from the kernel: the processes'
  file size limit set to 0): 200, the last good figures, and a gauge that says so.
"""

from __future__ import annotations

import contextlib
import resource as rlimits
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from pineapple._error_text import MAX_ERROR_BYTES
from server.workers._control import CONTROL_MAX_BYTES
from server.workers._store_format import MANIFEST_MAX_BYTES

from ..fakes import unified_config
from ..pod import WAIT, Server, children, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

_ERROR_ROOM = MAX_ERROR_BYTES + 512
"""A refused reload's whole answer: its bounded error, the step, the hash and the times."""


def _new_get(server: Server, path: str) -> httpx.Response:
    """``GET path`` on a new connection (with workers: whichever worker accepts it)."""
    return httpx.get(f"{server.url}{path}", timeout=WAIT)


def _manifest_bytes(server: Server) -> int:
    """The size of the pod's manifest (0 in one process, which has none)."""
    found = list((server.config.parent / "shm").glob("pineapple-*/manifest.json"))
    return max((p.stat().st_size for p in found), default=0)


def _workers(server: Server) -> list[psutil.Process]:
    """The live worker processes of a pod (spawned; the resource tracker is not)."""
    found = []
    for proc in children(server.proc.pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            if "spawn_main" in " ".join(proc.cmdline()) and proc.status() != "zombie":
                found.append(proc)
    return found


@pytest.mark.parametrize("error_bytes", [1_200_000, 60_000], ids=["1.2MB", "60KB"])
def test_a_config_with_a_huge_error_is_refused_bounded_and_nothing_wedges(
    serve: Callable[..., Server], error_bytes: int
) -> None:
    server = serve(unified_config("good"))
    assert server.items() == [{"id": "static", "tag": "good"}]
    huge = unified_config("bad", extra_ops={"o": {"type_name": "t" * error_bytes}})
    for _ in range(2):  # twice: a second refusal of the same bytes is no different
        refused = server.reload(huge)
        assert refused.status_code == 422, refused.text[:500]
        assert len(refused.content) < _ERROR_ROOM
        body = refused.json()
        assert body["step"] == "engine"
        assert "operator type not registered" in body["error"]  # the cut kept what went wrong
        assert "more bytes)" in body["error"]
    config = _new_get(server, "/config")
    assert config.status_code == 200
    assert len(config.json()["last_reload_error"]["error"].encode()) <= MAX_ERROR_BYTES
    assert _manifest_bytes(server) < 4 * MAX_ERROR_BYTES  # was 1.2 MB: every reader refused it
    probes = [_new_get(server, "/readyz").status_code for _ in range(10)]
    assert probes == [200] * 10
    assert server.items() == [{"id": "static", "tag": "good"}]  # the good config serves

    ok = server.reload(unified_config("after"))
    assert ok.status_code == 200, ok.text
    assert ok.json()["result"] == "ok"
    server.items_become([{"id": "static", "tag": "after"}])
    if not server.supervised:
        return
    victim = _workers(server)[0]
    victim.send_signal(signal.SIGKILL)
    server.wait_line(r"exited with -9 after", WAIT)
    server.wait_line(r"listening on", WAIT, times=3)  # two at start, then the new worker
    wait_until("two workers again", lambda: len(_workers(server)) == 2)
    assert victim.pid not in {p.pid for p in _workers(server)}
    probes = [_new_get(server, "/readyz").status_code for _ in range(10)]
    assert probes == [200] * 10
    server.items_become([{"id": "static", "tag": "after"}])


def _shared_config(tmp_path: Path, count: int) -> dict[str, Any]:
    """A valid config with ``count`` ``json_file`` resources (shared with ``--workers``)."""
    resources: dict[str, Any] = {}
    for i in range(count):
        table = tmp_path / f"table_{i}.json"
        table.write_text(f'[{{"id": "row{i}", "tag": "t"}}]')
        name = f"shared_table_with_a_descriptive_name_{i:04d}"
        resources[name] = {"type": "json_file", "interval": -1, "params": {"path": str(table)}}
    return unified_config("shared", resources=resources)


def test_a_flood_of_status_reads_never_makes_readyz_fail(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve(_shared_config(tmp_path, 60))  # ~50 KB of status: each read is work
    readers, probes = 32, 52
    answers: list[int] = []
    answered = threading.Lock()
    flooding = threading.Barrier(readers + 1, timeout=WAIT)
    stop = threading.Event()

    def flood(path: str) -> None:
        with server.new_client(timeout=WAIT) as client:
            first = True
            while not stop.is_set():  # bounded: until the probes are done
                code = client.get(path).status_code
                with answered:
                    answers.append(code)
                if first:
                    first = False
                    flooding.wait()  # every reader has been answered once: the flood is on

    threads = [
        threading.Thread(target=flood, args=("/resources" if i % 2 else "/config",))
        for i in range(readers)
    ]
    for thread in threads:
        thread.start()
    try:
        flooding.wait()
        with answered:
            before = len(answers)
        ready = [_new_get(server, "/readyz").status_code for _ in range(probes)]
        with answered:
            during = len(answers) - before
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT)
    assert ready.count(200) == probes, ready
    assert during >= probes  # the reads ran all along (one a probe at least)
    assert answers.count(200) == len(answers)  # and none was refused either


def test_a_status_over_the_control_channels_cap_is_served(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    count = 150
    server = serve(_shared_config(tmp_path, count))
    answer = _new_get(server, "/resources")
    assert answer.status_code == 200, answer.text[:500]
    assert len(answer.content) > CONTROL_MAX_BYTES  # more than one control message holds
    body = answer.json()
    assert set(body) == {"snapshot", "worker", "resources", "memory"}
    tables = [st for st in body["resources"] if st["type"] == "json_file"]
    assert len(tables) == count
    assert all(st["version"] == 1 and st["last_error"] is None for st in tables)
    one = _new_get(server, f"/resources/{tables[-1]['name']}")
    assert one.status_code == 200
    assert one.json()["status"]["name"] == tables[-1]["name"]
    assert _manifest_bytes(server) < MANIFEST_MAX_BYTES
    assert _new_get(server, "/readyz").status_code == 200


def _http_total(text: str, path: str = "/execute") -> float:
    """``pineapple_http_requests_total`` of ``path``, summed over its labels."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("pineapple_http_requests_total{") and f'route="{path}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _sample(text: str, name: str) -> list[float]:
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)]


class FileSizeLimit:
    """Sets the file size limit (``RLIMIT_FSIZE``) of running processes, and restores it.

    A limit of 0 makes every write to a file fail with ``EFBIG`` (Python ignores
    ``SIGXFSZ``): a flush into the pod's directory fails as on a full one.
    """

    def __init__(self) -> None:
        self._old: dict[int, tuple[int, int]] = {}

    def zero(self, pids: list[int]) -> None:
        for pid in pids:
            old = rlimits.prlimit(pid, rlimits.RLIMIT_FSIZE)
            self._old.setdefault(pid, old)
            rlimits.prlimit(pid, rlimits.RLIMIT_FSIZE, (0, old[1]))

    def restore(self) -> None:
        for pid, old in self._old.items():
            with contextlib.suppress(ProcessLookupError):  # a process that has ended
                rlimits.prlimit(pid, rlimits.RLIMIT_FSIZE, old)
        self._old.clear()


@pytest.fixture
def file_size_limit() -> Iterator[FileSizeLimit]:
    limit = FileSizeLimit()
    try:
        yield limit
    finally:
        limit.restore()


def test_metrics_serve_the_last_good_figures_while_every_flush_fails(
    serve: Callable[..., Server], file_size_limit: FileSizeLimit
) -> None:
    server = serve(unified_config("m"))
    pids = [server.proc.pid, *(p.pid for p in children(server.proc.pid))]
    for _ in range(5):
        server.items()
    wait_until("5 requests counted", lambda: _http_total(_new_get(server, "/metrics").text) == 5)

    file_size_limit.zero(pids)  # from now on every file write of the pod fails (EFBIG)
    for _ in range(3):
        server.items()
    for _ in range(4):  # whichever process answers
        scrape = _new_get(server, "/metrics")
        assert scrape.status_code == 200, scrape.text[:500]
        failing = _sample(scrape.text, "pineapple_metrics_flush_failing")
        failures = _sample(scrape.text, "pineapple_metrics_flush_failures_total")
        if server.supervised:  # the last figures copied: not one request after the limit
            assert _http_total(scrape.text) == 5
            assert failing == [1.0] and failures[0] >= 1
        else:  # one process has nothing to copy: its own figures, live
            assert _http_total(scrape.text) == 8
            assert failing == [0.0] and failures == [0.0]
        assert _new_get(server, "/stats").status_code == 200
        assert _new_get(server, "/readyz").status_code == 200

    file_size_limit.restore()
    wait_until(
        "the flushes to work again",
        lambda: (
            _http_total(text := _new_get(server, "/metrics").text) == 8
            and _sample(text, "pineapple_metrics_flush_failing") == [0.0]
        ),
    )
