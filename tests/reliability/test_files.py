"""Issue 11, item 6: json_file / csv_file read only regular files of bounded size.

Each case runs a real ``pineapple check --fetch`` or ``pineapple serve``
child under a memory limit and a timeout (see ``_files``): before the fix,
``/dev/zero`` grew until the limit and a FIFO hung the fetch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ._files import LimitedServe, check_fetch, file_config, poll, write_config

pytestmark = pytest.mark.e2e


def _refused(stderr: str, path: str, why: str) -> None:
    assert "ConfigError" in stderr, stderr
    assert "'table'" in stderr, stderr  # the resource
    assert path in stderr, stderr  # the path
    assert why in stderr, stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "rows.fifo"
    os.mkfifo(path)
    return path


def test_check_refuses_dev_zero_before_reading(tmp_path: Path) -> None:
    config = write_config(tmp_path, file_config("json", "/dev/zero"))
    done = check_fetch(config)
    assert done.returncode == 1
    _refused(done.stderr, "/dev/zero", "is a character device, not a regular file")
    assert "MemoryError" not in done.stderr


def test_check_refuses_a_fifo_without_hanging(tmp_path: Path, fifo: Path) -> None:
    config = write_config(tmp_path, file_config("csv", str(fifo)))
    done = check_fetch(config)  # no writer ever opens the FIFO: a blocking open never returns
    assert done.returncode == 1
    _refused(done.stderr, str(fifo), "is a FIFO, not a regular file")


def test_check_refuses_a_file_over_max_bytes(tmp_path: Path) -> None:
    data = tmp_path / "big.json"
    data.write_text('{"k": "' + "x" * 2000 + '"}')
    config = write_config(tmp_path, file_config("json", str(data), max_bytes=1024))
    done = check_fetch(config)
    assert done.returncode == 1
    _refused(done.stderr, str(data), "2009 bytes, over max_bytes 1024")
    # The same file under the limit loads.
    write_config(tmp_path, file_config("json", str(data), max_bytes=4096))
    ok = check_fetch(config)
    assert ok.returncode == 0, ok.stderr


def test_check_refuses_a_non_positive_max_bytes(tmp_path: Path) -> None:
    data = tmp_path / "t.json"
    data.write_text("{}")
    config = write_config(tmp_path, file_config("json", str(data), max_bytes=0))
    done = check_fetch(config)
    assert done.returncode == 1
    assert "resource 'table'" in done.stderr and "'max_bytes': must be > 0" in done.stderr


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_serve_does_not_start_on_a_special_file(tmp_path: Path, fifo: Path, target: str) -> None:
    path = str(fifo) if target == "fifo" else target
    config = write_config(tmp_path, file_config("json", path))
    serve = LimitedServe(config)
    try:
        assert serve.wait_exit() == 1
        _refused(serve.text(), path, "not a regular file")
    finally:
        serve.close()


def test_serve_keeps_the_old_value_when_the_file_is_swapped_for_a_fifo(
    tmp_path: Path, fifo: Path
) -> None:
    # A ConfigMap-style swap: the watched path becomes a symlink to a FIFO.
    good = tmp_path / "good.json"
    good.write_text('[{"id": "a", "tag": "t"}]')
    link = tmp_path / "table.json"
    link.symlink_to(good)
    config = write_config(tmp_path, file_config("json", str(link), interval=1))
    serve = LimitedServe(config)
    try:
        assert serve.get("/readyz").status_code == 200, serve.text()
        swap = tmp_path / "swap.json"
        swap.symlink_to(fifo)
        swap.replace(link)

        def refused() -> dict[str, object] | None:
            status: dict[str, object] = serve.get("/resources/table").json()["status"]
            return status if status["last_error"] else None

        status = poll("the refresh to fail", refused)
        assert "ConfigError" in str(status["last_error"])
        assert f"{link}: is a FIFO, not a regular file" in str(status["last_error"])
        assert status["version"] == 1  # the old value is still served
        assert serve.get("/healthz").status_code == 200
    finally:
        serve.close()
