"""Snapshot dirs of a supervisor that died without cleaning up: removed at the next start."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from server._shared import SharedStore
from server._stale_dirs import OWNER_FILE, mark_owner, remove_stale_dirs

from .test_e2e import ServeProcess
from .test_shared_workers import _config, _fill, _wait_workers, _workers

DEADLINE = 20.0


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def _dir(parent: Path, name: str, owner: str | None) -> Path:
    path = parent / name
    path.mkdir()
    (path / "manifest.json").write_text("{}")
    if owner is not None:
        (path / OWNER_FILE).write_text(owner)
    return path


def test_only_directories_whose_owner_is_gone_are_removed(tmp_path: Path) -> None:
    dead = _dir(tmp_path, "pineapple-dead", f"{_dead_pid()} 12345\n")
    recycled = _dir(tmp_path, "pineapple-recycled", f"{os.getpid()} 1\n")  # pid reused since
    live = tmp_path / "pineapple-live"
    live.mkdir()
    mark_owner(live)
    unmarked = _dir(tmp_path, "pineapple-unmarked", None)
    garbage = _dir(tmp_path, "pineapple-garbage", "not a pid")
    other = _dir(tmp_path, "other-dead", f"{_dead_pid()} 12345\n")
    removed = remove_stale_dirs(tmp_path)
    assert sorted(removed) == sorted([dead, recycled])
    assert not dead.exists() and not recycled.exists()
    assert live.exists() and unmarked.exists() and garbage.exists() and other.exists()


@pytest.mark.timeout(30)
def test_an_owner_file_that_is_no_regular_file_is_no_mark_and_never_blocks(
    tmp_path: Path,
) -> None:
    fifo = _dir(tmp_path, "pineapple-fifo", None)
    os.mkfifo(fifo / OWNER_FILE)  # no writer ever comes: a blocking open would wait forever
    device = _dir(tmp_path, "pineapple-device", None)
    (device / OWNER_FILE).symlink_to("/dev/zero")
    big = _dir(tmp_path, "pineapple-big", f"{_dead_pid()} 12345" + " " * 100)
    assert remove_stale_dirs(tmp_path) == []
    assert fifo.exists() and device.exists() and big.exists()


def test_a_new_store_sweeps_its_parent_and_marks_itself(tmp_path: Path) -> None:
    stale = _dir(tmp_path, "pineapple-old", f"{_dead_pid()} 12345\n")
    store = SharedStore.create(tmp_path)
    assert not stale.exists()
    assert (store.path / OWNER_FILE).read_text().split()[0] == str(os.getpid())
    assert remove_stale_dirs(tmp_path) == []  # its own owner is alive


@pytest.mark.e2e
def test_a_killed_supervisors_directory_is_removed_by_the_next_one(tmp_path: Path) -> None:
    db = tmp_path / "feed.db"
    _fill(db, 0, 30)
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(_config(db)))
    shared = tmp_path / "shm"
    shared.mkdir()
    args = ("--workers", "2", "--shared-dir", str(shared))
    first = ServeProcess(config, tmp_path / "closes.log", *args)
    workers: list[psutil.Process] = []
    try:
        _wait_workers(first, 2)
        workers = _workers(first)
        (left,) = shared.iterdir()
        first.proc.kill()  # SIGKILL: no clean-up runs
        first.proc.wait(timeout=DEADLINE)
        psutil.wait_procs(workers, timeout=DEADLINE)  # they exit once their parent is gone
        assert left.exists()
    finally:
        for child in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        first.close()
    second = ServeProcess(config, tmp_path / "closes.log", *args)
    try:
        assert not left.exists()  # swept before the new supervisor listens
        assert len(list(shared.iterdir())) == 1
        assert any(f"removed {left}" in line for line in second.log)
    finally:
        for child in _workers(second):
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        second.close()
