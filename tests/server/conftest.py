"""Fixtures of the server tests: a temp config file and a server Config around it, and
``serve``: a real ``pineapple serve`` in each process model (``pod.MODES``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

import server
from pineapple import resource

from .engines import TrackedEngine
from .fakes import GATES, Tracker, dump, tracked_registry
from .pod import MODES, Server

WriteConfig = Callable[[Mapping[str, Any]], bytes]
MakeConfig = Callable[..., server.Config]


@pytest.fixture
def tracker() -> Tracker:
    return Tracker()


@pytest.fixture(autouse=True)
def _clean_globals() -> Iterator[None]:
    GATES.clear()
    TrackedEngine.instances.clear()
    yield
    for gate in GATES.values():
        gate.go.set()  # never leave a request hanging after a failed test
    resource.lowlevel.flush_closes()


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "pineapple.json"


@pytest.fixture
def write_config(config_path: Path) -> WriteConfig:
    """Write a config in place (same inode); returns the bytes written."""

    def write(config: Mapping[str, Any]) -> bytes:
        data = dump(config)
        with open(config_path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return data

    return write


@pytest.fixture
def make_config(config_path: Path, tracker: Tracker) -> MakeConfig:
    """A server Config on ``config_path`` with the test registry and engine; no watcher."""

    def make(**overrides: Any) -> server.Config:
        settings: dict[str, Any] = {
            "config_path": config_path,
            "wiring": server.Wiring(
                registry=tracked_registry(tracker), engine_factory=TrackedEngine
            ),
            "watch": False,
            "admin_token": "",
            "drain_seconds": 10.0,
        }
        settings.update(overrides)
        return server.Config(**settings)

    return make


@pytest.fixture(params=list(MODES))
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start ``pineapple serve`` on a config, in one process or with ``--workers 2``."""
    started: list[Server] = []
    mode = MODES[request.param]

    def start(config: dict[str, Any], *args: str, env: dict[str, str] | None = None) -> Server:
        path = tmp_path / "pineapple.json"
        path.write_bytes(orjson.dumps(config))
        running = Server(path, *args, mode=mode, env=env)
        started.append(running)
        return running

    try:
        yield start
    finally:
        for running in started:
            running.close()
