"""``pineapple._file_kind.file_kind``: one word per file type for every refusal."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from pineapple._file_kind import file_kind


def test_names_each_kind(tmp_path: Path) -> None:
    regular = tmp_path / "f"
    regular.write_text("x")
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        kinds = [file_kind(os.stat(p).st_mode) for p in (regular, tmp_path, fifo, sock_path)]
    assert kinds == ["regular file", "directory", "FIFO", "socket"]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_a_device_and_an_unknown_mode() -> None:
    assert file_kind(os.stat("/dev/null").st_mode) == "character device"
    assert file_kind(stat.S_IFMT(0)) == "special file"
