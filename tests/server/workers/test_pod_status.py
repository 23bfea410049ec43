"""The pod's status file (``server/workers/_pod_status.py``): posted whole, read cached,
stale once the supervisor stops posting, kept (and stamped) when a write fails, and an
error when it would be too large."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from server._decisions import Refused
from server.workers import _pod_status
from server.workers._pod_status import STATUS_STALE_SECONDS, StatusBoard, StatusReader

pytestmark = pytest.mark.timeout(60)


class _Source:
    """What the supervisor would post; counts how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0
        self.resources = [{"name": "feed", "version": 1}]

    def __call__(self) -> dict[str, Any]:
        self.asked += 1
        return {"config": {"halted": None}, "resources": list(self.resources)}


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_post_is_read_whole_and_a_change_is_seen(tmp_path: Path) -> None:
    source = _Source()
    board = StatusBoard(tmp_path / "status.json", source)
    reader = StatusReader(tmp_path / "status.json")
    board.post()
    assert reader.resources() == {"feed": {"name": "feed", "version": 1}}
    assert reader.config() == {"halted": None}
    assert reader.read() is reader.read()  # unchanged: parsed once
    source.resources.append({"name": "other", "version": 3})
    board.post()
    assert set(reader.resources()) == {"feed", "other"}
    assert source.asked == 2


def test_an_unchanged_post_only_stamps_and_a_stale_one_means_no_supervisor(
    tmp_path: Path,
) -> None:
    path = tmp_path / "status.json"
    board = StatusBoard(path, _Source())
    reader = StatusReader(path)
    with pytest.raises(Refused, match="no supervisor: cannot read its status") as missing:
        reader.read()
    assert missing.value.status == 503
    board.post()
    inode = path.stat().st_ino
    _age(path, STATUS_STALE_SECONDS + 1)
    with pytest.raises(Refused, match=r"no supervisor: its status was last posted \d+\.\ds ago"):
        reader.config()
    board.post()  # the same status: the file is stamped, not written again
    assert path.stat().st_ino == inode
    assert reader.config() == {"halted": None}


def test_a_failed_write_keeps_the_last_status_and_stamps_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "status.json"
    source = _Source()
    board = StatusBoard(path, source)
    reader = StatusReader(path)
    board.post()
    # the writer's temporary name (this process and thread post): a directory there makes
    # every write fail (IsADirectoryError)
    blocker = tmp_path / f".status.json.{os.getpid()}.{threading.get_ident()}.tmp"
    blocker.mkdir()
    source.resources = [{"name": "changed", "version": 2}]
    _age(path, STATUS_STALE_SECONDS + 1)
    with caplog.at_level(logging.WARNING, "pineapple.server"):
        for _ in range(3):
            board.post()
    assert set(reader.resources()) == {"feed"}  # the last status, fresh again
    said = [r for r in caplog.records if "cannot write the pod's status" in r.getMessage()]
    assert len(said) == 1  # said once, not at every post
    blocker.rmdir()
    board.post()
    assert set(reader.resources()) == {"changed"}


def test_a_status_too_large_to_post_is_posted_as_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pod_status, "STATUS_MAX_BYTES", 256)
    source = _Source()
    source.resources = [{"name": f"r{i}", "version": 1} for i in range(50)]
    path = tmp_path / "status.json"
    StatusBoard(path, source).post()
    assert path.stat().st_size <= 256
    with pytest.raises(Refused, match=r"the pod's status is \d+ bytes, over 256") as caught:
        StatusReader(path).resources()
    assert caught.value.status == 507
    assert StatusReader(path).config() == {"halted": None}  # readiness still reads it


def test_the_board_posts_on_its_own_thread_until_stopped(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    source = _Source()
    board = StatusBoard(path, source)
    board.start()
    try:
        assert source.asked == 1  # posted at once: a worker started next reads it
        _age(path, STATUS_STALE_SECONDS + 1)
        deadline = time.monotonic() + 10
        while time.time() - path.stat().st_mtime > 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the board's next stamp, bounded
        assert StatusReader(path).config() == {"halted": None}
        source.resources = [{"name": "refreshed", "version": 2}]
        board.changed()  # as the publisher's metrics say after a background refresh
        deadline = time.monotonic() + 10
        while "refreshed" not in StatusReader(path).resources():
            assert time.monotonic() < deadline, "the change was never posted"
            time.sleep(0.05)  # polling the board's next wake, bounded
    finally:
        board.stop()
    assert not board._thread.is_alive()  # stopped within one wait
