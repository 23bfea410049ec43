"""A build parses its config once (``LoadedConfig``) and hands that to every step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from pineapple import resource
from server import Config, Wiring
from server._build import Builder

CONFIG: dict[str, Any] = {
    "pipeline_config": {
        "operators": {
            "recall": {
                "type_name": "recall_resource",
                "resource_name": "hot",
                "$metadata": {"item_output": ["id"]},
            }
        }
    },
    "pipeline_group": {"main": {"pipeline": ["recall"]}},
    "flow_contract": {"item_output": ["id"]},
    "resource_config": {
        "hot": {"type": "static", "interval": -1, "params": {"value": [{"id": 1}]}},
        "db": {
            "type": "static",
            "interval": -1,
            "params": {"value": {"token": "${HOUSE_TOKEN}"}},
        },
    },
}


def test_load_config_holds_root_hash_secrets_entries_and_folder(tmp_path: Path) -> None:
    data = json.dumps(CONFIG).encode()
    loaded = resource.lowlevel.load_config(
        data, env={"HOUSE_TOKEN": "s3cr3t-t0ken"}, source_dir=tmp_path
    )
    assert loaded.root == CONFIG and loaded.error is None
    assert len(loaded.content_hash) == 64 and loaded.data == data
    assert [e.name for e in loaded.entries] == ["db", "hot"] and loaded.problems == ()
    assert "s3cr3t-t0ken" in loaded.secrets
    assert loaded.source_dir == tmp_path.resolve()


def test_load_config_never_raises() -> None:
    assert resource.lowlevel.load_config(b"[1]").error is not None
    bad = resource.lowlevel.load_config(json.dumps({"resource_config": {"x": 3}}).encode())
    assert bad.root is not None and bad.problems and bad.resource_error() is not None


def test_a_build_parses_the_config_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.json"
    data = json.dumps(CONFIG).encode()
    path.write_bytes(data)
    parses: list[int] = []
    real = orjson.loads

    def counting(raw: Any) -> Any:
        if raw == data:
            parses.append(1)
        return real(raw)

    monkeypatch.setattr(orjson, "loads", counting)
    builder = Builder(
        Config(str(path), wiring=Wiring(env={"HOUSE_TOKEN": "s3cr3t-t0ken"}), watch=False)
    )
    snap = builder.build(data)
    try:
        assert snap.info.content_hash == resource.lowlevel.load_config(data).content_hash
        parses.clear()
        snap2 = builder.build(data)
        snap2.retire()
        assert snap2.wait_closed(10)
        assert len(parses) == 1, f"the config was parsed {len(parses)} times in one build"
        parses.clear()
        assert builder.check(data) == ["db", "hot"]
        assert len(parses) == 1, f"the config was parsed {len(parses)} times in one check"
    finally:
        snap.retire()
        assert snap.wait_closed(10)
