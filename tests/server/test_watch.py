"""The watcher picks up every way a config file gets replaced (real file operations).

Each test waits on the reloader's outcome for the new content's hash (an event
the server sets), never on a sleep.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from starlette.testclient import TestClient

import server
from server.lowlevel import ReloadOutcome, Service

from .conftest import MakeConfig, WriteConfig
from .fakes import dump, unified_config

BODY = b'{"common": {}, "items": []}'
WAIT = 10.0


def _served_tag(client: TestClient) -> str:
    response = client.post("/execute", content=BODY)
    assert response.status_code == 200, response.text
    tag: str = response.json()["items"][0]["tag"]
    return tag


def _wait_for(service: Service, data: bytes, result: str = "ok") -> ReloadOutcome:
    digest = hashlib.sha256(data).hexdigest()
    assert service.reloader.wait_for(
        lambda o: o.content_hash == digest and o.result == result, WAIT
    ), service.reloader.last
    outcome = service.reloader.last
    assert outcome is not None
    return outcome


def _watching(make_config: MakeConfig, **overrides: object) -> server.Config:
    settings: dict[str, object] = {"watch": True, "debounce_seconds": 0.05, "poll_seconds": 600.0}
    settings.update(overrides)
    return make_config(**settings)


def test_in_place_write_is_picked_up(write_config: WriteConfig, make_config: MakeConfig) -> None:
    write_config(unified_config("v1"))
    app = server.create_app(_watching(make_config))
    with TestClient(app) as client:
        assert _served_tag(client) == "v1"
        data = write_config(unified_config("v2"))
        outcome = _wait_for(app.state.service, data)
        assert outcome.trigger == "watch"
        assert _served_tag(client) == "v2"


def test_rename_save_is_picked_up(
    write_config: WriteConfig, make_config: MakeConfig, config_path: Path
) -> None:
    write_config(unified_config("v1"))
    app = server.create_app(_watching(make_config))
    with TestClient(app) as client:
        data = dump(unified_config("v2"))
        temp = config_path.with_name(".pineapple.json.swp")
        temp.write_bytes(data)
        os.replace(temp, config_path)  # what editors do: write a temp file, rename it over
        assert _wait_for(app.state.service, data).trigger == "watch"
        assert _served_tag(client) == "v2"


def test_configmap_symlink_swap_is_picked_up(make_config: MakeConfig, tmp_path: Path) -> None:
    # The layout kubelet writes for a mounted ConfigMap:
    #   pineapple.json -> ..data/pineapple.json,  ..data -> ..2026_01_01_v1
    mount = tmp_path / "configmap"
    mount.mkdir()
    first = mount / "..2026_01_01_v1"
    first.mkdir()
    (first / "pineapple.json").write_bytes(dump(unified_config("v1")))
    (mount / "..data").symlink_to(first.name)
    (mount / "pineapple.json").symlink_to("..data/pineapple.json")
    app = server.create_app(_watching(make_config, config_path=mount / "pineapple.json"))
    with TestClient(app) as client:
        assert _served_tag(client) == "v1"
        second = mount / "..2026_01_02_v2"
        second.mkdir()
        data = dump(unified_config("v2"))
        (second / "pineapple.json").write_bytes(data)
        (mount / "..data_tmp").symlink_to(second.name)
        os.rename(mount / "..data_tmp", mount / "..data")  # the atomic swap
        (first / "pineapple.json").unlink()
        first.rmdir()
        assert _wait_for(app.state.service, data).trigger == "watch"
        assert _served_tag(client) == "v2"


def test_invalid_write_is_refused_and_the_next_valid_one_served(
    write_config: WriteConfig, make_config: MakeConfig, config_path: Path
) -> None:
    write_config(unified_config("v1"))
    app = server.create_app(_watching(make_config))
    with TestClient(app) as client:
        broken = b'{"pipeline_config": '
        config_path.write_bytes(broken)
        outcome = _wait_for(app.state.service, broken, result="error")
        assert outcome.step == "engine"
        assert _served_tag(client) == "v1"
        data = write_config(unified_config("v3"))
        _wait_for(app.state.service, data)
        assert _served_tag(client) == "v3"


def test_poll_backstop_sees_changes_the_watch_cannot(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    # The config is a symlink into another directory: an in-place write to the
    # target makes no event in the watched directory; the poll finds it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "real.json"
    target.write_bytes(dump(unified_config("v1")))
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / "pineapple.json").symlink_to(target)
    config = _watching(make_config, config_path=watched / "pineapple.json", poll_seconds=0.2)
    app = server.create_app(config)
    with TestClient(app) as client:
        data = dump(unified_config("v2"))
        with open(target, "r+b") as f:
            f.write(data)
            f.truncate()
        assert _wait_for(app.state.service, data).trigger == "poll"
        assert _served_tag(client) == "v2"
