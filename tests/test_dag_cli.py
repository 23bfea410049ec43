"""``pineapple dag``: the operator graph of a config as DOT, Mermaid or SVG."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pineapple.cli import main

FIXTURE = (
    Path(os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple"))
    / "benchmarks"
    / "medium_0100_config.json"
)
ROOT = Path(__file__).resolve().parents[1]


def _fixture() -> Path:
    path = FIXTURE if FIXTURE.is_absolute() else (ROOT / FIXTURE).resolve()
    if not path.is_file():
        pytest.skip(f"fixture {path} absent (set PINE_FIXTURES_DIR)")
    return path


def _operators(config: Path) -> list[str]:
    from pineapple.engine import Engine

    with Engine(config.read_bytes()) as engine:
        return engine.operators


def test_dot_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    config = _fixture()
    assert main(["dag", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph pipeline {")
    for name in _operators(config):
        assert f'"{name}" [label=' in out


def test_mermaid_to_file(tmp_path: Path) -> None:
    config = _fixture()
    target = tmp_path / "dag.mmd"
    assert main(["dag", str(config), "--format", "mermaid", "-o", str(target)]) == 0
    assert target.read_text().startswith("graph TB\n")


def test_svg_names_every_operator(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip(
            "Graphviz `dot` is not installed (apt-get install graphviz); .ci/run installs it"
        )
    config = _fixture()
    target = tmp_path / "dag.svg"
    code = "import sys; from pineapple.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "dag", str(config), "--format", "svg"]
    done = subprocess.run(
        [*cmd, "-o", str(target)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    svg = target.read_text()
    assert "<svg" in svg
    for name in _operators(config):
        assert name in svg


def test_svg_without_graphviz_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _fixture()
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here
    assert main(["dag", str(config), "--format", "svg"]) == 1
    err = capsys.readouterr().err
    assert "apt-get install graphviz" in err


def test_unknown_group_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dag", str(_fixture()), "--group", "nope"]) == 1
    assert "unknown pipeline group" in capsys.readouterr().err
