"""``--secrets-dir``: ``${VAR}`` and the admin token read from a Secret mounted as files.

The unit tests lay out a folder as the kubelet does (``KEY -> ..data/KEY``,
``..data -> ..<timestamp>``, swapped whole on rotation) and try every way a
file could be unreadable or unbounded; the end-to-end test serves a config whose
item and admin token come only from files, in one process and with
``--workers 2``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from pineapple import ConfigError
from server._secret_files import MAX_SECRET_BYTES, MAX_SECRET_FILES, SecretFiles

from .pod import Server

pytestmark = pytest.mark.timeout(180)

TOKEN = "tok-9d41-files"
SECRET = "item-from-a-file-7731"


def _kubelet(folder: Path, values: dict[str, str], stamp: str) -> None:
    """Write ``values`` as the kubelet writes a Secret volume: a new timestamped folder,
    then ``..data`` swapped to it by a rename, each key a link through ``..data``."""
    real = folder / f"..{stamp}"
    real.mkdir()
    for key, value in values.items():
        (real / key).write_text(value)
    link = folder / "..data_tmp"
    link.symlink_to(real.name)
    os.replace(link, folder / "..data")
    for key in values:
        if not (folder / key).is_symlink():
            (folder / key).symlink_to(f"..data/{key}")


def test_the_environment_comes_first_then_the_file(tmp_path: Path) -> None:
    (tmp_path / "DSN").write_text("from-the-file\n")
    (tmp_path / "BOTH").write_text("file")
    env = SecretFiles(tmp_path, {"BOTH": "env"})
    assert env["DSN"] == "from-the-file"  # one trailing newline dropped (echo's)
    assert env["BOTH"] == "env"
    assert "DSN" in env and "BOTH" in env and "NONE" not in env
    with pytest.raises(KeyError):
        env["NONE"]
    assert sorted(env) == ["BOTH", "DSN"] and len(env) == 2


def test_a_kubelet_volume_is_read_and_its_rotation_seen(tmp_path: Path) -> None:
    _kubelet(tmp_path, {"FEED_MYSQL_DSN": "user:old@tcp(db:3306)/f"}, "2026_12_05_01")
    env = SecretFiles(tmp_path, {})
    assert env["FEED_MYSQL_DSN"] == "user:old@tcp(db:3306)/f"
    _kubelet(tmp_path, {"FEED_MYSQL_DSN": "user:new@tcp(db:3306)/f"}, "2026_12_05_02")
    assert env["FEED_MYSQL_DSN"] == "user:new@tcp(db:3306)/f"
    assert sorted(env) == ["FEED_MYSQL_DSN"]  # ..data and the timestamped folder are no names


def test_names_cannot_leave_the_folder(tmp_path: Path) -> None:
    inside = tmp_path / "secrets"
    inside.mkdir()
    (tmp_path / "outside").write_text("not yours")
    (inside / "LINK").symlink_to(tmp_path / "outside")
    (inside / "ZERO").symlink_to("/dev/zero")
    env = SecretFiles(inside, {})
    for name in ("../outside", "..", "", "A/B", "x y"):
        assert name not in env
        with pytest.raises(KeyError):
            env[name]
    for name in ("LINK", "ZERO"):
        with pytest.raises(ConfigError, match=rf"secret file {inside}/{name}: resolves outside"):
            env[name]


def test_unreadable_files_are_named_errors_without_their_content(tmp_path: Path) -> None:
    (tmp_path / "BIG").write_bytes(b"s3cr3t" + b"x" * MAX_SECRET_BYTES)
    (tmp_path / "BINARY").write_bytes(b"s3cr3t\xff\xfe")
    os.mkfifo(tmp_path / "FIFO")  # never written: a blocking read would hang here
    (tmp_path / "DIR").mkdir()
    env = SecretFiles(tmp_path, {})
    cases = {
        "BIG": f"more than {MAX_SECRET_BYTES} bytes",
        "BINARY": "not UTF-8 text",
        "FIFO": "not a regular file",
        "DIR": "not a regular file|Is a directory",
    }
    for name, said in cases.items():
        with pytest.raises(ConfigError, match=rf"^secret file {tmp_path}/{name}: ({said})") as e:
            env[name]
        assert "s3cr3t" not in str(e.value)


def test_listing_is_bounded(tmp_path: Path) -> None:
    for i in range(MAX_SECRET_FILES + 50):
        (tmp_path / f"K{i}").write_text("v")
    assert len(SecretFiles(tmp_path, {})) == MAX_SECRET_FILES
    assert SecretFiles(tmp_path, {})[f"K{MAX_SECRET_FILES + 49}"] == "v"  # a lookup reads one


def test_a_missing_folder_is_an_empty_one(tmp_path: Path) -> None:
    env = SecretFiles(tmp_path / "absent", {"A": "1"})
    assert dict(env) == {"A": "1"} and "B" not in env


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
        "hot": {"type": "static", "interval": -1, "params": {"value": [{"id": "${PINE_ITEM}"}]}},
    },
}


@pytest.mark.e2e
def test_the_config_and_the_admin_token_read_the_secrets_folder(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    _kubelet(secrets, {"PINE_ITEM": SECRET, "PINEAPPLE_ADMIN_TOKEN": TOKEN + "\n"}, "a")
    server = serve(CONFIG, "--secrets-dir", str(secrets))
    assert server.items() == [{"id": SECRET}]
    assert server.http.post("/admin/reload").status_code == 401
    bearer = {"authorization": f"Bearer {TOKEN}"}
    # A rotated secret is read by the next build: a changed config's reload.
    _kubelet(secrets, {"PINE_ITEM": SECRET + "-2", "PINEAPPLE_ADMIN_TOKEN": TOKEN}, "b")
    changed = {**CONFIG, "flow_contract": {"item_output": ["id"], "common_output": []}}
    server.config.write_bytes(orjson.dumps(changed))
    reloaded = server.http.post("/admin/reload", headers=bearer)
    assert reloaded.status_code == 200 and reloaded.json()["result"] == "ok", reloaded.text
    server.items_become([{"id": SECRET + "-2"}])
    assert TOKEN not in server.text()
