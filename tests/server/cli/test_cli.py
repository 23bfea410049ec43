"""``pineapple check`` (like ``nginx -t``) and ``pineapple serve`` start-up failures."""

from __future__ import annotations

from pathlib import Path

from ..._serve import ROOT, run_cli
from ..fakes import dump, items_resource, unified_config
from ..pod import PLUGIN


def test_check_accepts_a_valid_config_without_fetching(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    # A resource that would fail to fetch: check does not fetch it without --fetch.
    failing = items_resource("feed", "v1", fail=True)
    path.write_bytes(dump(unified_config("v1", resources={"feed": failing}, recall_from="feed")))
    result = run_cli("check", str(path), "--plugin", PLUGIN)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stdout
    assert "feed" in result.stdout


def test_check_fetch_reports_a_failing_resource(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    failing = items_resource("feed", "v1", fail=True)
    path.write_bytes(dump(unified_config("v1", resources={"feed": failing}, recall_from="feed")))
    result = run_cli("check", str(path), "--fetch", "--plugin", PLUGIN)
    assert result.returncode == 1
    assert "[start]" in result.stderr and "'feed'" in result.stderr
    assert "test failed" in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


def test_check_reports_a_missing_dependency(tmp_path: Path) -> None:
    path = tmp_path / "deps.json"
    path.write_bytes(dump(unified_config("v1", recall_from="nowhere")))
    result = run_cli("check", str(path), "--plugin", PLUGIN)
    assert result.returncode == 1
    assert "[deps]" in result.stderr and "nowhere" in result.stderr


def test_check_reports_an_unreadable_file(tmp_path: Path) -> None:
    result = run_cli("check", str(tmp_path / "missing.json"), "--plugin", PLUGIN)
    assert result.returncode == 1
    assert "[read]" in result.stderr


def test_serve_exits_non_zero_when_the_first_load_fails(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    failing = items_resource("feed", "v1", fail=True)
    path.write_bytes(dump(unified_config("v1", resources={"feed": failing}, recall_from="feed")))
    result = run_cli("serve", str(path), "--addr", "127.0.0.1:0", "--plugin", PLUGIN)
    assert result.returncode == 1
    assert "not serving" in result.stderr and "feed" in result.stderr
    assert "listening" not in result.stderr
    assert "hunter2" not in result.stderr


def test_check_the_demo_config() -> None:
    result = run_cli("check", "configs/demo.json", "--fetch")
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stdout


def test_check_reports_every_problem_at_once(tmp_path: Path) -> None:
    config = unified_config("v1", recall_from="feed")
    config["pipeline_config"]["operators"]["cut"] = {"type_name": "filter_truncat", "top_n": 1}
    config["pipeline_group"]["main"]["pipeline"].append("cut")
    config["resource_config"] = {
        "feed": {"type": "statik", "params": {"value": []}},
        "a": {"type": "static", "params": {"value": "${PINE_TEST_UNSET_A}/${PINE_TEST_UNSET_B}"}},
        "b": {"type": "static", "params": {"valu": 1}},
        "c": {"type": "json_file", "params": {"path": "${PINE_TEST_UNSET_C}"}},
    }
    path = tmp_path / "bad.json"
    path.write_bytes(dump(config))
    result = run_cli("check", str(path), "--plugin", PLUGIN)
    assert result.returncode == 1
    err = result.stderr
    # The engine and the resources are both checked ...
    assert 'operator type not registered in operator "cut"' in err
    assert "did you mean 'filter_truncate'?" in err
    # ... and every resource problem is named, not only the first.
    assert "4 problems" in err
    assert "unknown type 'statik'; did you mean 'static'?" in err
    assert "'PINE_TEST_UNSET_A', 'PINE_TEST_UNSET_B' are not set" in err
    assert "unknown parameter 'valu'; did you mean 'value'?" in err
    assert "'PINE_TEST_UNSET_C' is not set" in err
    assert "test failed" in err


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    # From another folder, as a user checking main/configs/demo.json from its parent.
    demo = ROOT / "configs" / "demo.json"
    result = run_cli("check", str(demo), "--fetch", timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "2 resource(s) fetched" in result.stdout
