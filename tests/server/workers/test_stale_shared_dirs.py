"""Snapshot dirs of a supervisor that died without cleaning up: removed at the next start."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from server.workers.supervisor._publishing import SharedStore
from server.workers.supervisor._stale_dirs import (
    LOCK_MARK,
    OWNER_FILE,
    _start_time,
    mark_owner,
    remove_stale_dirs,
)

from ..._serve import Serve
from ..pod import serve_plugin
from .test_shared_workers import _config, _fill, _wait_workers

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


_HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
)


@contextlib.contextmanager
def _locked_by_another_process(path: Path) -> Iterator[None]:
    """``path`` locked (``flock``) by a child process until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            assert proc.stdout.readline() == "locked\n"
            yield
        finally:
            proc.stdin.close()  # end of file: the child exits and its lock goes
            proc.wait(timeout=30)


def test_the_lock_decides_never_the_pid_in_the_owner_file(tmp_path: Path) -> None:
    # Pid 1 runs in this namespace: by its pid this one would look alive (another
    # container's supervisor wrote it), but nobody holds its lock.
    unlocked = _dir(tmp_path, "pineapple-unlocked", f"1 12345 {LOCK_MARK}\n")
    # Its text names a dead pid, but a live process holds its lock: it is owned.
    held = _dir(tmp_path, "pineapple-held", f"{_dead_pid()} 12345 {LOCK_MARK}\n")
    live = tmp_path / "pineapple-live"
    live.mkdir()
    own = mark_owner(live)  # this process: a second open of the file cannot take the lock
    unmarked = _dir(tmp_path, "pineapple-unmarked", None)
    empty = _dir(tmp_path, "pineapple-empty", "")  # an owner still creating its mark
    garbage = _dir(tmp_path, "pineapple-garbage", "not a pid")
    other = _dir(tmp_path, "other-dead", f"{_dead_pid()} 12345 {LOCK_MARK}\n")
    try:
        with _locked_by_another_process(held / OWNER_FILE):
            removed = remove_stale_dirs(tmp_path)
            assert removed == [unlocked]
            assert held.exists() and live.exists()
        assert remove_stale_dirs(tmp_path) == [held]  # its owner is gone now
    finally:
        os.close(own)
    assert live.exists() and unmarked.exists() and empty.exists() and other.exists()
    assert garbage.exists()
    assert remove_stale_dirs(tmp_path) == [live]  # this process let its lock go


def test_a_mark_of_a_version_before_the_lock_is_judged_by_its_pid(tmp_path: Path) -> None:
    # Such an owner never locks, and it reads a mark of three fields as no mark: so the
    # two versions may share a parent directory without deleting each other's store.
    alive = _dir(tmp_path, "pineapple-old-alive", f"{os.getpid()} {_start_time(os.getpid())}\n")
    dead = _dir(tmp_path, "pineapple-old-dead", f"{_dead_pid()} 12345\n")
    recycled = _dir(tmp_path, "pineapple-old-recycled", f"{os.getpid()} 1\n")  # pid reused
    assert sorted(remove_stale_dirs(tmp_path)) == sorted([dead, recycled])
    assert alive.exists()
    with _locked_by_another_process(alive / OWNER_FILE):  # and the lock still counts
        (alive / OWNER_FILE).write_text(f"{_dead_pid()} 12345\n")
        assert remove_stale_dirs(tmp_path) == []


@pytest.mark.timeout(30)
def test_an_owner_file_that_is_no_regular_file_is_no_mark_and_never_blocks(
    tmp_path: Path,
) -> None:
    fifo = _dir(tmp_path, "pineapple-fifo", None)
    os.mkfifo(fifo / OWNER_FILE)  # no writer ever comes: a blocking open would wait forever
    device = _dir(tmp_path, "pineapple-device", None)
    (device / OWNER_FILE).symlink_to("/dev/zero")
    big = _dir(tmp_path, "pineapple-big", f"{_dead_pid()} 12345" + " " * 300)
    assert remove_stale_dirs(tmp_path) == []
    assert fifo.exists() and device.exists() and big.exists()


def test_a_new_store_sweeps_its_parent_and_marks_itself(tmp_path: Path) -> None:
    stale = _dir(tmp_path, "pineapple-old", f"{_dead_pid()} 12345\n")
    store = SharedStore.create(tmp_path)
    assert not stale.exists()
    assert (store.path / OWNER_FILE).read_text().split()[0] == str(os.getpid())
    assert remove_stale_dirs(tmp_path) == []  # its owner holds the lock
    store.remove()
    assert not store.path.exists() and list(tmp_path.iterdir()) == []


def _pod_files(tmp_path: Path) -> tuple[Path, Path]:
    """A config serving a 30-row SQLite feed, and an empty ``--shared-dir``, under ``tmp_path``."""
    db = tmp_path / "feed.db"
    _fill(db, 0, 30)
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(_config(db)))
    shared = tmp_path / "shm"
    shared.mkdir()
    return config, shared


@pytest.mark.e2e
def test_a_killed_supervisors_directory_is_removed_by_the_next_one(tmp_path: Path) -> None:
    config, shared = _pod_files(tmp_path)
    args = ("--workers", "2", "--shared-dir", str(shared))
    with serve_plugin(config, tmp_path / "closes.log", *args) as first:  # kills its workers
        _wait_workers(first, 2)
        workers = first.workers()
        (left,) = shared.iterdir()
        first.proc.kill()  # SIGKILL: no clean-up runs
        first.proc.wait(timeout=DEADLINE)
        psutil.wait_procs(workers, timeout=DEADLINE)  # they exit once their parent is gone
        assert left.exists()
    with serve_plugin(config, tmp_path / "closes.log", *args) as second:
        assert not left.exists()  # swept before the new supervisor listens
        assert len(list(shared.iterdir())) == 1
        assert any(f"removed {left}" in line for line in second.log)


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_two_supervisors_on_one_shared_dir_keep_each_others_store(tmp_path: Path) -> None:
    config, shared = _pod_files(tmp_path)
    args = ("--workers", "2", "--shared-dir", str(shared), "--no-watch")
    first = serve_plugin(config, tmp_path / "closes.log", *args)
    second: Serve | None = None
    try:
        first_pids = _wait_workers(first, 2)
        (first_store,) = shared.iterdir()
        # As another PID namespace would see it: its owner's pid names some other live
        # process here (pid 1, with a start time that is not pid 1's). Rewritten in place:
        # the supervisor's lock is on this file, whatever it says.
        with open(first_store / OWNER_FILE, "r+") as owner:
            owner.write(f"1 12345 {LOCK_MARK}\n")
            owner.truncate()
        # A directory whose text names a live pid here, but whose lock nobody holds.
        orphan = _dir(shared, "pineapple-orphan", f"1 12345 {LOCK_MARK}\n")
        second = serve_plugin(config, tmp_path / "closes.log", *args)
        _wait_workers(second, 2)
        assert first_store.exists() and (first_store / "control.sock").exists()
        assert not orphan.exists()
        assert any(f"removed {orphan}" in line for line in second.log)
        assert not any(f"removed {first_store}" in line for line in second.log)
        assert len(list(shared.iterdir())) == 2
        # The first supervisor still decides (its control socket) and still restarts a
        # worker that maps its store.
        reload = httpx.post(f"{first.url}/admin/reload", timeout=DEADLINE)
        assert reload.status_code == 200 and reload.json()["result"] == "unchanged"
        os.kill(min(first_pids), signal.SIGKILL)
        end = time.monotonic() + DEADLINE
        while min(first_pids) in {p.pid for p in first.workers()} or len(first.workers()) < 2:
            assert time.monotonic() < end, "".join(first.log)
            time.sleep(0.05)  # polling another process's state, with a deadline
        body = {"common": {"cat": "c1"}, "items": []}
        for server in (first, second):
            response = httpx.post(f"{server.url}/execute", json=body, timeout=10)
            assert response.status_code == 200 and response.json()["items"], response.text
        assert first.proc.poll() is None and second.proc.poll() is None
    finally:
        for server in [first] if second is None else [first, second]:
            server.close()
