"""Without the public fixtures, a test run ends with one loud line saying so (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(180)
def test_a_run_without_the_fixtures_says_how_many_tests_did_not_run(tmp_path: Path) -> None:
    env = {**os.environ, "PINE_FIXTURES_DIR": str(tmp_path / "nowhere")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    notes = [line for line in done.stdout.splitlines() if line.startswith("NOTE: ")]
    assert len(notes) == 1, done.stdout[-2000:]
    assert "conformance tests did not run: the public fixtures are not at" in notes[0]
    assert str(tmp_path / "nowhere") in notes[0] and "PINE_FIXTURES_DIR" in notes[0]
    count = int(notes[0].split()[1])
    assert count >= 5  # one per fixture folder at least
