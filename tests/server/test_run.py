"""``pineapple run CONFIG --request FILE|-``: real processes (Go's ``pineapple-run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from .fakes import dump, items_resource, unified_config

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.server.process_plugin"
FIXTURES = Path(os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple"))


def pineapple_run(
    *args: str, stdin: bytes = b"", close_log: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if close_log is not None:
        env["PINEAPPLE_TEST_CLOSE_LOG"] = str(close_log)
    code = "import sys; from pineapple.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, "run", *args],
        input=stdin,
        capture_output=True,
        timeout=60,  # the bound of every test here: a hang fails, never blocks CI
        env=env,
        cwd=ROOT,
    )


def _config(tmp_path: Path, **kwargs: object) -> Path:
    path = tmp_path / "config.json"
    path.write_bytes(dump(unified_config("v1", **kwargs)))  # type: ignore[arg-type]
    return path


def test_prints_the_response_indented_as_go_and_closes_resources(tmp_path: Path) -> None:
    config = _config(tmp_path, resources={"feed": items_resource("feed", "v1")}, recall_from="feed")
    request = tmp_path / "request.json"
    request.write_bytes(b'{"common": {}, "items": []}')
    log = tmp_path / "closes.log"
    result = pineapple_run(
        str(config), "--request", str(request), "--plugin", PLUGIN, close_log=log
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        b'{\n  "common": {},\n  "items": [\n'
        b'    {\n      "id": "static",\n      "tag": "v1"\n    },\n'
        b'    {\n      "id": "feed",\n      "tag": "v1"\n    }\n  ]\n}\n'
    )
    # The config's resource came from a real Manager, and was closed exactly once.
    assert [line.split()[:3] for line in log.read_text().splitlines()] == [["close", "feed", "v1"]]


def test_request_from_stdin_and_static_resources_replace_the_configs(tmp_path: Path) -> None:
    # The config's resource would fail to fetch: with --static-resources it is never fetched.
    failing = items_resource("feed", "v1", fail=True)
    config = _config(tmp_path, resources={"feed": failing}, recall_from="feed")
    static = tmp_path / "static.json"
    static.write_bytes(b'{"feed": [{"id": "from-static", "tag": "s"}]}')
    result = pineapple_run(
        str(config),
        "--request",
        "-",
        "--static-resources",
        str(static),
        "--plugin",
        PLUGIN,
        stdin=b'{"common": {}, "items": []}',
    )
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["items"][1] == {"id": "from-static", "tag": "s"}
    assert b"cannot reach" not in result.stderr


def test_a_resource_failure_is_reported_and_the_run_goes_on_as_go(tmp_path: Path) -> None:
    failing = items_resource("feed", "v1", fail=True)
    config = _config(tmp_path, resources={"feed": failing}, recall_from="feed")
    result = pineapple_run(
        str(config), "--request", "-", "--plugin", PLUGIN, stdin=b'{"common": {}, "items": []}'
    )
    # recall_resource without its resource fails the execution: exit 1, the error on stderr.
    assert result.returncode == 1
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert "resources not loaded" in stderr and "'feed'" in stderr
    assert "execution error" in stderr and "from_resource" in stderr
    assert "hunter2" not in stderr


def test_bad_inputs_exit_1_naming_what_was_wrong(tmp_path: Path) -> None:
    config = _config(tmp_path)
    bad = pineapple_run(str(config), "--request", "-", stdin=b"{not json")
    assert bad.returncode == 1 and b"error parsing request" in bad.stderr
    missing = pineapple_run(str(config), "--request", str(tmp_path / "nope.json"))
    assert missing.returncode == 1 and b"error reading request" in missing.stderr
    big = pineapple_run(
        str(config), "--request", "-", "--max-request-bytes", "100", stdin=b" " * 10_000
    )
    assert big.returncode == 1 and b"more than the limit of 100 bytes" in big.stderr
    broken = tmp_path / "broken.json"
    broken.write_bytes(b'{"pipeline_config": {}}')
    engine = pineapple_run(str(broken), "--request", "-", stdin=b'{"common": {}}')
    assert engine.returncode == 1 and b"error creating engine" in engine.stderr


def test_a_realistic_benchmark_config_runs_on_the_bench_stubs() -> None:
    base = FIXTURES if FIXTURES.is_absolute() else ROOT / FIXTURES
    config = base / "benchmarks" / "realistic_for_you_config.json"
    if not config.is_file():
        pytest.skip("PINE_FIXTURES_DIR absent")
    request = config.with_name("realistic_for_you_request.json")
    result = pineapple_run(str(config), "--request", str(request), "--bench-stubs")
    assert result.returncode == 0, result.stderr
    assert len(orjson.loads(result.stdout)["items"]) == 10
