"""Trial builds (``server/workers/supervisor/_trial.py``) in real spawned processes."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest

import server
from server._build_error import BuildError
from server.workers.supervisor import _trial
from server.workers.supervisor._publishing import SharedStore

from ..fakes import items_resource, unified_config

PLUGIN = "tests.server.process_plugin"

pytestmark = pytest.mark.process  # a trial build is a process of its own


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SharedStore]:
    (tmp_path / "shm").mkdir()
    store = SharedStore.create(tmp_path / "shm")
    try:
        yield store
    finally:
        store.remove()


def _trials() -> list[psutil.Process]:
    """This process's spawned children still running (a trial is one)."""
    found = []
    for child in psutil.Process().children():
        try:
            if "spawn_main" in " ".join(child.cmdline()) and child.is_running():
                found.append(child)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def _data(fail: bool) -> bytes:
    feed = items_resource("feed", "v1", fail=fail)
    return orjson.dumps(unified_config("v1", resources={"feed": feed}, recall_from="feed"))


def _settings(tmp_path: Path, *plugins: str, start_timeout: float = 30.0) -> server.Config:
    return server.Config(
        config_path=tmp_path / "pineapple.json", plugins=plugins, start_timeout=start_timeout
    )


@pytest.mark.timeout(120)
def test_a_trial_answers_what_a_worker_would_and_leaves_no_process(
    tmp_path: Path, store: SharedStore
) -> None:
    config = _settings(tmp_path, PLUGIN)
    assert _trial.trial_build(config, store, _data(fail=False), threading.Event()) is True
    with pytest.raises(BuildError) as refused:
        _trial.trial_build(config, store, _data(fail=True), threading.Event())
    assert refused.value.step == "start"
    assert "cannot reach" in str(refused.value) and "hunter2" not in str(refused.value)
    assert _trials() == []


@pytest.mark.timeout(120)
def test_a_trial_that_never_answers_is_killed_at_its_bound(
    tmp_path: Path, store: SharedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text("import threading\nthreading.Event().wait()\n")  # an import never ends
    monkeypatch.setattr(_trial, "TRIAL_SPAWN_SECONDS", 4.0)
    config = _settings(tmp_path, str(hang), start_timeout=1.0)
    config = dataclasses.replace(config, build_timeout_seconds=0.5)  # the longer of the two
    started = time.monotonic()
    with pytest.raises(BuildError, match=r"no worker could build it within 5s"):
        _trial.trial_build(config, store, _data(fail=False), threading.Event())
    assert time.monotonic() - started < 5.0 + 15.0  # the bound, plus a kill and a reap
    assert _trials() == []


@pytest.mark.timeout(120)
def test_a_trial_stops_as_soon_as_the_supervisor_does(tmp_path: Path, store: SharedStore) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text("import threading\nthreading.Event().wait()\n")
    config = _settings(tmp_path, str(hang))  # its own bound: 30 s + 30 s
    stopping = threading.Event()
    timer = threading.Timer(1.0, stopping.set)
    timer.start()
    started = time.monotonic()
    try:
        assert _trial.trial_build(config, store, _data(fail=False), stopping) is False
    finally:
        timer.cancel()
    assert time.monotonic() - started < 15.0
    assert _trials() == []
