"""``pineapple run CONFIG --request FILE|-``: real processes (Go's ``pineapple-run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ..fakes import dump, items_resource, unified_config

ROOT = Path(__file__).resolve().parents[3]
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
    assert result.stderr == b""  # every resource type (feed_data, datahub_producer) loaded
    assert len(orjson.loads(result.stdout)["items"]) == 10


def _traced_config(tmp_path: Path, lua: str = "return 1") -> Path:
    config = {
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_static",
                    "items": [{"id": 1, "s": 2}],
                    "$metadata": {"item_output": ["id", "s"]},
                },
                "size": {
                    "type_name": "transform_size",
                    "skip": ["_off"],
                    "$metadata": {"common_input": ["_off"], "common_output": ["n"]},
                },
                "double": {
                    "type_name": "transform_by_lua",
                    "lua_script": f"function f() {lua} end",
                    "function_for_item": "f",
                    "debug": True,
                    "$metadata": {"item_input": ["s"], "item_output": ["t"]},
                },
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall", "size", "double"]}},
        "flow_contract": {"common_input": ["_off"], "item_output": ["id", "t"]},
    }
    path = tmp_path / "traced.json"
    path.write_bytes(orjson.dumps(config))
    return path


def test_trace_adds_one_entry_per_operator_as_the_server_does(tmp_path: Path) -> None:
    config = _traced_config(tmp_path, "return s * 2")
    request = b'{"common": {"_off": true}, "items": []}'
    plain = pineapple_run(str(config), "--request", "-", stdin=request)
    assert plain.returncode == 0, plain.stderr
    assert "trace" not in orjson.loads(plain.stdout)
    result = pineapple_run(str(config), "--request", "-", "--trace", stdin=request)
    assert result.returncode == 0, result.stderr
    out = orjson.loads(result.stdout)
    assert out["items"] == [{"id": 1, "t": 4}]
    trace = out["trace"]
    assert [(t["name"], t.get("skipped", False)) for t in trace] == [
        ("recall", False),
        ("size", True),
        ("double", False),
    ]
    assert all(isinstance(t["duration_ms"], int | float) for t in trace)
    # debug on "double": its snapshots, as the server's trace has them.
    assert trace[2]["input_snapshot"] == {"items": [{"s": 2}]}
    assert trace[2]["output_snapshot"] == {"item_writes": {"0": {"t": 4}}}
    assert "input_snapshot" not in trace[0]


def test_trace_of_a_failed_run_goes_to_stderr_after_the_error(tmp_path: Path) -> None:
    config = _traced_config(tmp_path, "error('boom')")
    result = pineapple_run(
        str(config), "--request", "-", "--trace", stdin=b'{"common": {"_off": false}}'
    )
    assert result.returncode == 1 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    trace = lines[-1]
    # The error spans lines: a Lua error carries the engine's stack traceback (as Go's).
    start = next(i for i, line in enumerate(lines) if line.startswith("pineapple run: execution"))
    error = "\n".join(lines[start:-1])
    assert error.startswith(
        'pineapple run: execution error: pine: execution error in operator "double"'
    )
    assert "boom" in error and error.endswith('[string "transform_by_lua"]:1: in main chunk')
    names = [t["name"] for t in orjson.loads(trace.removeprefix("trace: "))]
    assert names == ["recall", "size", "double"]
