"""Operator params are checked against their schema when a config is built: ``pineapple
check``, ``serve`` and a reload refuse a plugin operator's ``float`` param given ``"x"``
(which would otherwise fail every request), naming the operator, the param, what was
given and what was expected; a refused reload leaves the served config answering."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .._serve import run_cli
from .fakes import dump, unified_config
from .pod import MODES, PLUGIN, WAIT, Server

pytestmark = pytest.mark.e2e

NAMED = (
    'pine: registry error [test_scaled]: operator "scale": '
    'param factor must be numeric, got string "x"'
)
"""The error of every path: the type, the operator's name, the param, given, expected."""


def _config(factor: Any) -> dict[str, Any]:
    return unified_config("v1", extra_ops={"scale": {"type_name": "test_scaled", "factor": factor}})


def _write(tmp_path: Path, factor: Any) -> Path:
    path = tmp_path / "pineapple.json"
    path.write_bytes(dump(_config(factor)))
    return path


def test_check_refuses_a_plugin_param_of_the_wrong_type(tmp_path: Path) -> None:
    result = run_cli("check", str(_write(tmp_path, "x")), "--plugin", PLUGIN, timeout=WAIT)
    assert result.returncode == 1, result.stdout
    assert NAMED in result.stderr
    assert "test failed" in result.stderr


@pytest.mark.parametrize("factor", [1.5, 2, 2.0])
def test_check_accepts_any_json_number_for_a_float_param(tmp_path: Path, factor: Any) -> None:
    result = run_cli("check", str(_write(tmp_path, factor)), "--plugin", PLUGIN, timeout=WAIT)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stdout


@pytest.mark.parametrize("mode", list(MODES))
def test_serve_exits_naming_the_param(tmp_path: Path, mode: str) -> None:
    extra: tuple[str, ...] = MODES[mode]
    if extra:
        (tmp_path / "shm").mkdir()
        extra = (*extra, "--shared-dir", str(tmp_path / "shm"))
    path = _write(tmp_path, "x")
    args = ("serve", str(path), "--addr", "127.0.0.1:0", "--plugin", PLUGIN, *extra)
    result = run_cli(*args, timeout=WAIT)
    assert result.returncode == 1, result.stderr
    assert NAMED in result.stderr
    assert "listening" not in result.stderr


def test_a_reload_to_a_bad_param_is_refused_and_the_served_config_keeps_answering(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config(1.5), "--plugin", PLUGIN)
    before = server.http.get("/config").json()
    assert server.items() == [{"id": "static", "tag": "v1"}]
    refused = server.reload(_config("x"))
    assert refused.status_code == 422, refused.text
    outcome = refused.json()
    assert (outcome["result"], outcome["step"]) == ("error", "engine")
    assert NAMED in outcome["error"]
    for _ in range(4):  # new connections: with workers, any of them answers
        body = httpx.get(f"{server.url}/config", timeout=WAIT).json()
        assert body["config"]["content_hash"] == before["config"]["content_hash"]
        assert NAMED in body["last_reload_error"]["error"]
        answer = httpx.post(f"{server.url}/execute", content=b'{"common":{},"items":[]}')
        assert answer.status_code == 200, answer.text
        assert answer.json()["items"] == [{"id": "static", "tag": "v1"}]
