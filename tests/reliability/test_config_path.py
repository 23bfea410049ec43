"""Issue 11, item 7: a config path that is not a regular file never wedges the server.

Replacing the served config with a FIFO used to block a thread in ``open()``
forever (no writer ever comes): ``/admin/reload`` hung on the reload lock,
later edits were never applied and SIGTERM never finished. Now the file is
opened with ``O_NONBLOCK`` and refused by type (and size) before a byte is read.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import server
from server._config_read import ConfigFileError, read_config_file
from server._reloader import Reloader
from server._snapshot import SnapshotHolder
from server.metrics._metrics import ServerMetrics

from .._serve import Serve, run_cli
from ._reload import PLUGIN, digest, valid, wait_config

pytestmark = pytest.mark.e2e

BODY = b'{"common": {}, "items": []}'


def _replace_with_fifo(path: Path) -> None:
    temp = path.with_name(f".{path.name}.fifo")
    os.mkfifo(temp)
    os.replace(temp, path)  # atomically, as a rename-save would


def _replace_with(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    folder = tmp_path / "etc"
    folder.mkdir()
    return folder / "pineapple.json"


@pytest.mark.timeout(90)
def test_a_fifo_in_place_of_the_served_config_never_wedges_the_server(config_file: Path) -> None:
    config_file.write_bytes(valid("v0"))
    serve = Serve(config_file, "--plugin", PLUGIN)
    try:
        with serve.new_client(timeout=5) as http:  # every request below is answered within 5 s
            _replace_with_fifo(config_file)
            reload = http.post("/admin/reload")  # used to hang: the watcher held the lock
            assert reload.status_code == 422, reload.text
            body = reload.json()
            assert body["step"] == "read"
            assert "is not a regular file (it is a FIFO)" in body["error"]
            assert str(config_file) in body["error"]
            config = http.get("/config").json()
            assert config["file"] == {"type": "FIFO", "regular": False, "size": 0}
            assert config["last_reload"]["step"] == "read"
            assert http.post("/execute", content=BODY).status_code == 200  # v0 serves on

            fixed = valid("v1")
            _replace_with(config_file, fixed)  # a later valid edit is applied
            last = wait_config(
                http, lambda b: (b["last_reload"] or {}).get("content_hash") == digest(fixed)
            )["last_reload"]
            assert last["result"] == "ok", last
            items = http.post("/execute", content=BODY).json()["items"]
            assert {item["tag"] for item in items} == {"v1"}
        assert serve.terminate(timeout=15) == 0  # SIGTERM finishes promptly
    finally:
        serve.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["check", "serve"])
def test_serve_and_check_on_a_fifo_exit_1_at_once_with_the_reason(
    config_file: Path, command: str
) -> None:
    os.mkfifo(config_file)
    args = [command, str(config_file)]
    if command == "serve":
        args += ["--addr", "127.0.0.1:0"]
    started = time.monotonic()
    done = run_cli(*args, timeout=30)  # used to block in open() until killed here
    assert done.returncode == 1, done.stderr
    assert "is not a regular file (it is a FIFO)" in done.stderr
    assert str(config_file) in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: p.mkdir(), "directory"),
        (lambda p: p.symlink_to("/dev/null"), "character device"),
        (lambda p: os.mkfifo(p), "FIFO"),
    ],
)
def test_read_refuses_anything_but_a_regular_file_by_its_type(
    tmp_path: Path, make: Any, kind: str
) -> None:
    path = tmp_path / "config.json"
    make(path)
    with pytest.raises(ConfigFileError, match=f"is not a regular file \\(it is a {kind}\\)") as exc:
        read_config_file(path, 1024)
    assert exc.value.step == "read" and exc.value.path == path


def test_read_refuses_a_file_over_the_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b" " * 2048)
    with pytest.raises(ConfigFileError, match="is 2048 bytes, over the limit of 1024 bytes"):
        read_config_file(path, 1024)
    assert read_config_file(path, 2048) == b" " * 2048


class _StuckBuilder:
    """A builder whose build blocks until ``gate`` is set, then fails."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def load(self, data: bytes) -> Any:
        return data  # the parse: this builder's build never reads it

    def build(self, data: Any, *, carry_over: Any = None) -> Any:
        self.entered.set()
        if not self.gate.wait(30):  # bounded: the test sets it in its finally
            raise AssertionError("gate never opened")
        raise server.BuildError("engine", "released by the test")


@pytest.mark.timeout(60)
def test_no_trigger_and_no_shutdown_waits_forever_for_a_stuck_reload(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(valid("v0"))
    config = server.Config(config_path=path, start_timeout=0.5, watch=False)
    holder = SnapshotHolder()
    builder = _StuckBuilder()
    reloader = Reloader(config, holder, builder, ServerMetrics(lambda: None))  # type: ignore[arg-type]
    stuck = threading.Thread(target=reloader.reload, args=("watch",), daemon=True)
    stuck.start()
    try:
        assert builder.entered.wait(10)
        answers: list[server.lowlevel.ReloadOutcome] = []
        admin = threading.Thread(target=lambda: answers.append(reloader.reload("admin")))
        admin.start()
        admin.join(10)  # used to wait on the reload lock forever
        assert not admin.is_alive()
        assert answers[0].result == "error" and answers[0].step == "busy"
        assert "another reload has been running for over 0.5s" in (answers[0].error or "")
        closer = threading.Thread(target=reloader.close)
        closer.start()
        closer.join(10)
        assert not closer.is_alive()
        assert builder.cancelled.is_set()  # close cancels the build in progress
    finally:
        builder.gate.set()
        stuck.join(10)
    assert reloader.reload("admin").error == "shutting down"
