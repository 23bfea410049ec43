"""Writing generated files, and ``--check`` failing on stale ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import codegen
from pineapple.cli import main as pineapple_main

from .conftest import REPO


def test_write_then_check_is_clean(tmp_path: Path, rendered: dict[str, str]) -> None:
    assert codegen.write_files(tmp_path, rendered) == ["operators.py", "resources.py"]
    assert codegen.stale_files(tmp_path, rendered) == []
    assert codegen.write_files(tmp_path, rendered) == []  # nothing changed, nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["operators.py", "resources.py"]


def test_generated_files_are_mode_0644_whatever_the_umask(tmp_path: Path) -> None:
    # mkstemp makes 0600 files; a generated source is read by everyone like any other.
    # A child process, so the strict umask is its own.
    code = "import sys, pathlib, codegen; sys.exit(codegen.run(out=pathlib.Path(sys.argv[1])))"
    for _ in range(2):  # written new, then rewritten over a stale file
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)],
            cwd=REPO,
            umask=0o077,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
        assert modes == {"operators.py": 0o644, "resources.py": 0o644}
        (tmp_path / "operators.py").write_text("# stale\n")
        (tmp_path / "operators.py").chmod(0o600)


def test_stale_and_missing_files_are_reported(tmp_path: Path, rendered: dict[str, str]) -> None:
    assert codegen.stale_files(tmp_path, rendered) == ["operators.py", "resources.py"]
    codegen.write_files(tmp_path, rendered)
    path = tmp_path / "resources.py"
    path.write_text(path.read_text() + "# edited by hand\n")
    assert codegen.stale_files(tmp_path, rendered) == ["resources.py"]


def test_run_check_fails_on_a_stale_file_and_passes_after_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert codegen.run(out=tmp_path) == 0
    assert codegen.run(check=True, out=tmp_path) == 0
    (tmp_path / "operators.py").write_text("# stale\n")
    assert codegen.run(check=True, out=tmp_path) == 1
    assert "operators.py is stale" in capsys.readouterr().err
    assert (tmp_path / "operators.py").read_text() == "# stale\n"  # --check writes nothing
    assert codegen.run(out=tmp_path) == 0
    assert codegen.run(check=True, out=tmp_path) == 0


def test_python_m_codegen_check_exit_codes(tmp_path: Path) -> None:
    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codegen", "--check", "--out", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    missing = check()
    assert missing.returncode == 1 and "stale" in missing.stderr
    subprocess.run(
        [sys.executable, "-m", "codegen", "--out", str(tmp_path)],
        check=True,
        cwd=REPO,
        capture_output=True,
    )
    assert check().returncode == 0


def test_pineapple_codegen_subcommand(tmp_path: Path) -> None:
    assert pineapple_main(["codegen", "--out", str(tmp_path)]) == 0
    assert pineapple_main(["codegen", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "resources.py").unlink()
    assert pineapple_main(["codegen", "--check", "--out", str(tmp_path)]) == 1


def test_checked_in_files_are_current() -> None:
    """What CI runs: the files in dsl/generated match the registries.

    In a fresh process: other tests register test-only operators in this
    process's default registry, which the checked-in files rightly lack.
    """
    assert codegen.default_target() == REPO / "dsl" / "generated"
    done = subprocess.run(
        [sys.executable, "-m", "codegen", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
