"""``pineapple dag``: the operator graph of a config as DOT, Mermaid or SVG."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pineapple._config_file import DEFAULT_MAX_CONFIG_BYTES
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


def _dag_in_a_child(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from pineapple.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, "dag", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_a_config_over_the_limit_is_refused_naming_its_size_and_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "big.json"
    config.write_bytes(b" " * 2048)
    assert main(["dag", str(config), "--max-config-bytes", "1024"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pineapple dag: ")
    assert "is 2048 bytes, over the limit of 1024 bytes (--max-config-bytes)" in err
    assert str(config) in err


def test_the_default_limit_is_the_one_every_config_command_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sparse.json"
    with config.open("wb") as fh:
        fh.truncate(DEFAULT_MAX_CONFIG_BYTES + 1)  # sparse: refused by size, never read
    assert main(["dag", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"over the limit of {DEFAULT_MAX_CONFIG_BYTES} bytes (--max-config-bytes)" in err


def test_help_shows_the_limit_and_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dag", "--help"])
    assert exc.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--max-config-bytes N" in help_text
    assert f"(default: {DEFAULT_MAX_CONFIG_BYTES})" in help_text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["FIFO", "character device"])
def test_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "config.json"
    if kind == "FIFO":
        os.mkfifo(config)  # no writer ever comes: a blocking open would wait forever
    else:
        config.symlink_to("/dev/zero")  # endless: a plain read would exhaust memory
    done = _dag_in_a_child(str(config))
    assert done.returncode == 1, done.stderr
    assert f"is not a regular file (it is a {kind})" in done.stderr
    assert done.stdout == ""
