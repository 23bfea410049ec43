"""A pod asked to stop while its workers still start exits 0 (real ``pineapple serve``).

Each worker's build holds in a per-worker resource's fetch (``hold_until_exists``
of the test plugin) and says so with a file, so SIGTERM reaches both while they
build, before any of them serves: they die of it, which is the stop the pod was
asked for, not a failure.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from .fakes import dump, items_resource, unified_config
from .test_e2e import PLUGIN, ROOT

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
    cmd = [sys.executable, "-c", "import sys; from pineapple.cli import main; sys.exit(main())"]
    cmd += ["serve", str(config), "--addr", "127.0.0.1:0", "--plugin", PLUGIN, "--no-watch"]
    cmd += ["--workers", "2", "--shared-dir", str(shm), "--shutdown-delay-seconds", "0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + WITHIN
        while len(list(tmp_path.glob("go.*"))) < 2:  # both workers hold in their build
            assert proc.poll() is None and time.monotonic() < end, "the workers never held"
            time.sleep(0.05)  # polling other processes' files, with a deadline
        workers = psutil.Process(proc.pid).children()
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=WITHIN)
        assert proc.returncode == 0, log
        assert "Traceback" not in log, log
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, alive
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
