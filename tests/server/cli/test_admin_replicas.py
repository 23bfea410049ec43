"""``pineapple admin ... --addr A --addr B``: one action on every replica, two real servers."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..._serve import ROOT, Serve, run_cli
from ..pod import serve_plugin
from ..test_operator_logs import _config, _items

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[Serve]]:
    (tmp_path / "feed.json").write_text(_items(2))
    config = tmp_path / "pineapple.json"
    config.write_text(json.dumps(_config(str(tmp_path / "feed.json"))))
    servers: list[Serve] = []
    try:
        for n in range(2):
            servers.append(serve_plugin(config, tmp_path / f"closes{n}.log", "--no-watch"))
        yield servers
    finally:
        for server in servers:
            server.close()


def _admin(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # nothing else of ours
    return run_cli("admin", *args, env=env, timeout=60)


def _addr(server: Serve) -> str:
    return server.addr


def _pinned(server: Serve) -> str:
    status = httpx.get(f"{server.url}/resources/feed", timeout=10).json()["status"]
    return str(next(c for c in status["conditions"] if c["type"] == "Pinned")["status"])


@pytest.fixture
def refused_addr() -> Iterator[str]:
    """A loopback port that is bound but not listening: every connect is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def test_one_action_reaches_every_server_and_reports_each(
    replicas: list[Serve], refused_addr: str
) -> None:
    a, b = (_addr(s) for s in replicas)
    pinned = _admin("pin", "feed", "--addr", a, "--addr", b, "-o", "json")
    assert pinned.returncode == 0, pinned.stderr
    lines = pinned.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [a, b]
    assert all(json.loads(line.split(": ", 1)[1])["result"] == "pinned" for line in lines)
    assert [_pinned(s) for s in replicas] == ["True", "True"]

    # A server that cannot be reached fails the command, and the others are still asked.
    unpinned = _admin("unpin", "feed", "--addr", a, "--addr", refused_addr, "--addr", b)
    assert unpinned.returncode == 2
    assert [line.split(": ", 1)[0] for line in unpinned.stdout.splitlines()] == [a, b]
    assert f"{refused_addr}: pineapple admin: cannot reach {refused_addr}" in unpinned.stderr
    assert "1 of 3 servers failed" in unpinned.stderr
    assert [_pinned(s) for s in replicas] == ["False", "False"]

    # Every server refuses (no previous value kept): exit 1, each refusal printed.
    refused = _admin("rollback", "feed", "--addr", a, "--addr", b)
    assert refused.returncode == 1
    assert [line.split(": ", 1)[0] for line in refused.stderr.splitlines()[:2]] == [a, b]
    assert "2 of 2 servers failed" in refused.stderr


def test_one_address_prints_the_bare_answer(replicas: list[Serve]) -> None:
    done = _admin("pin", "feed", "--addr", _addr(replicas[0]), "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "pinned"
    assert [_pinned(s) for s in replicas] == ["True", "False"]
