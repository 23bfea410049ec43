"""A config is parsed once per reload: by the supervisor, by one process and by a worker.

A spy on the one parse function (``server._build.load_config``, which
``Builder.load`` calls) counts every parse of every config's bytes, so each
count below is exact: the supervisor's check, publisher, per-worker
fingerprints, engine fingerprint and trial plan all read one parsed value.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import server
from pineapple.resource.lowlevel import LoadedConfig, load_config
from server import _build
from server._build import import_plugins
from server.lowlevel import Service
from server.workers.supervisor._authority import ConfigAuthority
from server.workers.supervisor._publishing import SharedStore

from ..fakes import dump, unified_config


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes of every config parsed from now on, in order."""
    import_plugins(())  # the built-in types (json_file)
    seen: list[bytes] = []

    def spy(data: bytes, **kwargs: Any) -> LoadedConfig:
        seen.append(data)
        return load_config(data, **kwargs)

    monkeypatch.setattr(_build, "load_config", spy)
    return seen


def _config_bytes(tmp_path: Path, table: str, *, tag: str = "v1") -> bytes:
    entry = {"type": "json_file", "interval": -1, "params": {"path": table}}
    return dump(unified_config(tag, resources={"table": entry}))


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.json").write_text('{"k": 1}')
    (tmp_path / "b.json").write_text('{"k": 2}')
    path = tmp_path / "pineapple.json"
    path.write_bytes(_config_bytes(tmp_path, "a.json"))
    return path


@pytest.fixture
def authority(tmp_path: Path, files: Path) -> Iterator[ConfigAuthority]:
    (tmp_path / "shm").mkdir()
    store = SharedStore.create(tmp_path / "shm")
    config = server.Config(config_path=files, workers=2, watch=False, start_timeout=10.0)
    authority = ConfigAuthority(config, store, threading.Event())
    try:
        yield authority
    finally:
        authority.close()
        authority.board.stop()
        store.remove()


@pytest.mark.timeout(60)
def test_the_supervisor_parses_each_config_once(
    tmp_path: Path, files: Path, authority: ConfigAuthority, parses: list[bytes]
) -> None:
    authority.load_initial()
    assert len(parses) == 1  # check, publisher and plan read one parse
    assert authority.generation == 1
    assert authority.publisher is not None and authority.publisher.names() == ["table"]

    changed = _config_bytes(tmp_path, "b.json")  # a resource changed: no trial needed
    files.write_bytes(changed)
    outcome = authority.reload("admin")
    assert outcome.result == "ok" and outcome.serial == 2
    assert parses[1:] == [changed]

    assert authority.reload("admin").result == "unchanged"
    assert authority.reload("watch").result == "unchanged"
    assert len(parses) == 2  # unchanged bytes are never parsed

    bad = changed.replace(b'"recall_static"', b'"no_such_operator"')
    files.write_bytes(bad)
    refused = authority.reload("watch")
    assert refused.result == "error" and refused.step == "engine" and refused.serial == 2
    assert parses[2:] == [bad]
    assert authority.reload("watch") is refused  # not retried: not parsed again
    assert len(parses) == 3


@pytest.mark.timeout(60)
def test_one_process_parses_each_config_once(
    tmp_path: Path, files: Path, parses: list[bytes]
) -> None:
    service = Service(server.Config(config_path=files, watch=False))
    service.start()
    try:
        assert len(parses) == 1
        changed = _config_bytes(tmp_path, "b.json", tag="v2")
        files.write_bytes(changed)
        assert service.reloader.reload("admin").result == "ok"
        assert parses[1:] == [changed]
        assert service.reloader.reload("admin").result == "unchanged"
        assert service.reloader.apply(changed).result == "ok"  # as a worker follows
        assert parses[1:] == [changed, changed]
    finally:
        service.stop()
