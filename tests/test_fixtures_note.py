"""Without the public fixtures, a test run ends with one loud line saying so (tests/conftest.py),
and in CI it fails (tests/conformance/_fixtures.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_without_fixtures(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``pytest tests/conformance`` with the fixtures absent, outside CI unless ``env`` says."""
    outside_ci = {k: v for k, v in os.environ.items() if k not in ("CI", _REQUIRE)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance"],
        cwd=ROOT,
        env={**outside_ci, "PINE_FIXTURES_DIR": str(tmp_path / "nowhere"), **env},
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )


_REQUIRE = "PINEAPPLE_REQUIRE_SERVICES"


@pytest.mark.timeout(180)
def test_a_run_without_the_fixtures_says_how_many_tests_did_not_run(tmp_path: Path) -> None:
    done = _run_without_fixtures(tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    notes = [line for line in done.stdout.splitlines() if line.startswith("NOTE: ")]
    assert len(notes) == 1, done.stdout[-2000:]
    assert "conformance tests did not run: the public fixtures are not at" in notes[0]
    assert str(tmp_path / "nowhere") in notes[0] and "PINE_FIXTURES_DIR" in notes[0]
    count = int(notes[0].split()[1])
    assert count >= 5  # one per fixture folder at least


@pytest.mark.timeout(360)
@pytest.mark.parametrize("ci", [{"CI": "true"}, {_REQUIRE: "1"}], ids=["CI=true", _REQUIRE])
def test_in_ci_a_run_without_the_fixtures_fails(tmp_path: Path, ci: dict[str, str]) -> None:
    done = _run_without_fixtures(tmp_path, **ci)
    assert done.returncode == 1, done.stdout[-2000:]  # tests failed (not a usage error)
    assert "CI runs every fixture" in done.stdout
    summary = done.stdout.splitlines()[-1]
    assert " error" in summary and "skipped" not in summary, summary  # none skipped: all failed
