"""A pod asked to stop while its workers still start exits 0 (real ``pineapple serve``).

Each worker's build holds in a per-worker resource's fetch (``hold_until_exists``
of the test plugin) and says so with a file, so SIGTERM reaches both while they
build, before any of them serves: they die of it, which is the stop the pod was
asked for, not a failure.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest

from ..._serve import Serve
from ..fakes import dump, items_resource, unified_config
from ..pod import PLUGIN

pytestmark = pytest.mark.e2e

WITHIN = 60.0  # two Python processes start on a busy 2-core machine


@pytest.mark.timeout(120)
def test_sigterm_while_the_workers_still_build_exits_0(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    held = items_resource("mine", "t", hold_until_exists=str(gate), hold_in="pineapple-worker")
    resources = {"mine": held}  # per worker; the start's trial build does not hold
    config = tmp_path / "pineapple.json"
    config.write_bytes(dump(unified_config("t", resources=resources)))
    shm = tmp_path / "shm"
    shm.mkdir()
    args = ("--plugin", PLUGIN, "--no-watch", "--workers", "2", "--shared-dir", str(shm))
    server = Serve(config, *args, wait=False)  # its workers never listen: they hold
    try:
        end = time.monotonic() + WITHIN
        while len(list(tmp_path.glob("go.*"))) < 2:  # both workers hold in their build
            assert server.proc.poll() is None and time.monotonic() < end, "the workers never held"
            time.sleep(0.05)  # polling other processes' files, with a deadline
        workers = psutil.Process(server.proc.pid).children()
        server.proc.send_signal(signal.SIGTERM)
        code = server.wait_exit(WITHIN)
        log = server.text()
        assert code == 0, log
        assert "Traceback" not in log, log
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, alive
    finally:
        gate.touch()
        server.close()
