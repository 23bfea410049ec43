"""``pineapple-server`` and ``pineapple-run`` as real processes, on the upstream fixtures.

The Go server's command line (``-config C -addr 127.0.0.1:PORT``) serves the
shared fixtures with the same bytes ``pineapple serve`` answers (the
expectations of ``tests/conformance/test_server_byte_exact.py`` and
``tests/server/http/test_go_answers.py``), in one process and with
``--workers 2``; Go's defaults hold (no ``/execute`` deadline, a 10 MiB body
limit). ``pineapple-run -config C -request R`` prints Go's indented bytes.
"""

from __future__ import annotations

import json
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.cli import _go_commands

from ..._serve import GO_RUN, ROOT, Serve, cli_env, run_cli
from ...conformance._fixtures import fixtures_absent, fixtures_dir
from ...conformance.test_server_byte_exact import EXPECTED
from ..fakes import dump, unified_config
from ..http.test_go_answers import GO_ANSWERS
from ..pod import PLUGIN

SERVED: dict[str, tuple[int, bytes]] = {**EXPECTED, **GO_ANSWERS}
"""Each fixture's status and bytes, as ``pineapple serve`` answers them (and Go)."""


def _fixture(name: str) -> dict[str, Any]:
    base = fixtures_dir()
    if base is None or not (base / name).is_file():
        fixtures_absent()
    data: dict[str, Any] = json.loads((base / name).read_text())
    return data


@pytest.fixture(params=["one process", "--workers 2"])
def mode(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, ...]:
    """``pineapple-server``'s extra flags for the process model (Go's spelling)."""
    if request.param == "one process":
        return ()
    return ("--workers", "2", "-shared-dir", str(tmp_path))


def _go_server(config: Path, *args: str) -> Serve:
    env = cli_env({"PINEAPPLE_TEST_CLOSE_LOG": str(config.parent / "closes.log")})
    return Serve(config, "-plugin", PLUGIN, *args, env=env, go=True)


@pytest.mark.timeout(240)
def test_the_fixtures_are_answered_as_before(mode: tuple[str, ...], tmp_path: Path) -> None:
    for name in sorted(SERVED):
        data = _fixture(name)
        config = tmp_path / "config.json"
        config.write_text(json.dumps(data["config"]))
        with _go_server(config, *mode) as server, server.new_client(30) as http:
            response = http.post("/execute", content=json.dumps(data["request"]))
            assert (response.status_code, response.content) == SERVED[name], name


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Path]:
    """A config whose pipeline holds each request until ``gate/go`` exists."""
    gate = tmp_path / "gate"
    gate.mkdir()
    config = tmp_path / "gated.json"
    extra = {"hold": {"type_name": "test_file_gate", "folder": str(gate)}}
    config.write_bytes(dump(unified_config("t", extra_ops=extra)))
    yield config
    (gate / "go").touch()  # no request outlives its test


@pytest.mark.timeout(120)
def test_go_defaults_no_deadline_and_a_10_mib_body(mode: tuple[str, ...], gated: Path) -> None:
    gate = gated.parent / "gate"
    with _go_server(gated, *mode) as server, server.new_client(30) as http:
        answers: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answers.append(http.post("/execute", content=b'{"common": {}}'))
        )
        thread.start()
        thread.join(3.0)  # `pineapple serve` would have answered 504 after its 1 s
        assert not answers, answers[0].content
        assert (gate / "entered").exists()
        (gate / "go").touch()
        thread.join(30)
        assert answers[0].status_code == 200, answers[0].content
        # Go's 10 MiB limit: 9 MiB (over our own 8 MiB) is read, one byte past 10 MiB is 413.
        pad = b'{"common": {}}'
        nine = pad + b" " * (9 * 1024 * 1024 - len(pad))
        assert http.post("/execute", content=nine).status_code == 200
        over = pad + b" " * (10 * 1024 * 1024 + 1 - len(pad))
        assert http.post("/execute", content=over).status_code == 413


def test_a_refused_go_flag_exits_2_before_serving(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(dump(unified_config("t")))
    server = Serve(config, "-admin-addr", ":6060", go=True, wait=False)
    try:
        assert server.wait_exit() == 2
        assert "-admin-addr :6060: Go's pprof listener" in server.text()
    finally:
        server.close()


# Go's json.Encoder with SetIndent("", "  ") over the fixtures' answers.
RUN_BYTES: dict[str, bytes] = {
    "server_byte_exact/01_empty_items_success.json": (
        b'{\n  "common": {\n    "b": "hello"\n  },\n  "items": []\n}\n'
    ),
    "server_byte_exact/04_number_precision.json": (
        b'{\n  "common": {},\n  "items": [\n'
        b'    {\n      "doubled": 200000,\n      "item_score": 100000\n    },\n'
        b'    {\n      "doubled": 2000002,\n      "item_score": 1000001\n    },\n'
        b'    {\n      "doubled": 1,\n      "item_score": 0.5\n    }\n  ]\n}\n'
    ),
    "server_byte_exact/05_empty_common_response.json": (
        b'{\n  "common": {},\n  "items": [\n    {\n      "id": "a",\n      "score": 1\n    }\n'
        b"  ]\n}\n"
    ),
}


def _pineapple_run(*args: str) -> Any:
    return run_cli(*args, main=GO_RUN, timeout=60)


@pytest.mark.parametrize("name", sorted(RUN_BYTES))
def test_pineapple_run_prints_the_fixtures_bytes(name: str, tmp_path: Path) -> None:
    data = _fixture(name)
    config, request = tmp_path / "c.json", tmp_path / "r.json"
    config.write_text(json.dumps(data["config"]))
    request.write_text(json.dumps(data["request"]))
    result = _pineapple_run("-config", str(config), "-request", str(request))
    assert result.returncode == 0, result.stderr
    assert result.stdout.encode() == RUN_BYTES[name]


def test_pineapple_run_failures_exit_1_as_go(tmp_path: Path) -> None:
    data = _fixture("server_byte_exact/02_partial_error_keeps_partial_result.json")
    config, request = tmp_path / "c.json", tmp_path / "r.json"
    config.write_text(json.dumps(data["config"]))
    request.write_text(json.dumps(data["request"]))
    failed = _pineapple_run(f"--config={config}", "-request", str(request))
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr.startswith(
        'pineapple-run: execution error: pine: execution error in operator "normalize_bad"'
    )
    usage = _pineapple_run("-config", str(config))
    assert usage.returncode == 1 and usage.stderr.startswith("Usage: pineapple-run -config")
    unknown = _pineapple_run("-config", str(config), "-request", str(request), "-nope")
    assert unknown.returncode == 2 and "flag provided but not defined: -nope" in unknown.stderr


def test_the_console_scripts_are_these_functions() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module = _go_commands.__name__
    assert scripts["pineapple-server"] == f"{module}:server_main"
    assert scripts["pineapple-run"] == f"{module}:run_main"
    assert f"from {module} import server_main" in sys.modules["tests._serve"].GO_SERVER
    assert f"from {module} import run_main" in GO_RUN
