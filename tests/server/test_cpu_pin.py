"""``--pin-cpus``: every thread of each serving process runs on one CPU, worker ``i`` on
the ``i``-th of the server's CPUs; the answers are the same (both process models)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from server._cpu_pin import cpu_for

from ._modes import MODES, WORKERS, serving, serving_pids


def _allowed(pid: int) -> list[set[int]]:
    """The CPUs each thread of ``pid`` may run on (``/proc/PID/task/*/status``)."""
    masks = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                masks.append(_cpus(line.split(":", 1)[1].strip()))
    return masks


def _cpus(text: str) -> set[int]:
    """``0-2,5`` -> ``{0, 1, 2, 5}``."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def test_the_cpu_of_a_process_goes_round_the_mask() -> None:
    mask = sorted(os.sched_getaffinity(0))
    assert [cpu_for(i) for i in range(2 * len(mask))] == mask + mask


@pytest.mark.parametrize("mode", MODES)
def test_each_serving_process_runs_on_one_cpu_of_its_own(mode: str, tmp_path: Path) -> None:
    mask = sorted(os.sched_getaffinity(0))
    with serving(mode, tmp_path, "--pin-cpus") as server:
        assert (
            httpx.post(
                f"{server.url}/execute", content=b'{"common":{},"items":[]}', timeout=10
            ).status_code
            == 200
        )
        pids = serving_pids(server.proc.pid, WORKERS[mode])
        pinned = []
        for pid in pids:
            masks = _allowed(pid)
            assert len(masks) > 1  # the pool's threads, the heartbeat's...
            assert all(m == masks[0] for m in masks) and len(masks[0]) == 1, masks
            pinned.append(masks[0].pop())
        wanted = {mask[i % len(mask)] for i in range(len(pids))}
        assert set(pinned) == wanted, (pinned, mask)
        assert server.count("pinned to CPU") == len(pids)


@pytest.mark.parametrize("mode", MODES)
def test_without_the_flag_nothing_is_pinned(mode: str, tmp_path: Path) -> None:
    mask = os.sched_getaffinity(0)
    with serving(mode, tmp_path) as server:
        assert (
            httpx.post(
                f"{server.url}/execute", content=b'{"common":{},"items":[]}', timeout=10
            ).status_code
            == 200
        )
        for pid in serving_pids(server.proc.pid, WORKERS[mode]):
            assert all(m == mask for m in _allowed(pid))
