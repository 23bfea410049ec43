"""The INVALID verdict of ``make bench``: a run whose own conditions did not hold is not judged."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import exit_code, print_table
from benchmarks._measure import Result, invalid_closed_loop, invalid_open_loop


def test_invalid_reason_overrides_pass_and_fail() -> None:
    assert Result(5, "x", 1.0, 2.0, "d").verdict == "PASS"
    assert Result(5, "x", 3.0, 2.0, "d").verdict == "FAIL"
    assert Result(5, "x", 1.0, 2.0, "d", "held 10 of 60 req/s").verdict == "INVALID"
    assert Result(5, "x", 3.0, 2.0, "d", "held 10 of 60 req/s").verdict == "INVALID"


def test_open_loop_that_did_not_hold_its_rate_is_invalid() -> None:
    reason = invalid_open_loop(
        requested_rate=62.0, completed=400, seconds=10.0, generator_cpu_seconds=0.5
    )
    assert reason is not None and "40 of 62 req/s" in reason


def test_saturated_steady_p99_is_invalid() -> None:
    # The run: PASS printed with 2,441 ms vs a steady p99 of 1,503 ms at 62 req/s.
    reason = invalid_open_loop(
        requested_rate=62.0,
        completed=620,
        seconds=10.0,
        generator_cpu_seconds=0.5,
        steady_p99=1.503,
        unloaded=0.004,
    )
    assert reason is not None and "saturated" in reason and "1,503.0 ms" in reason


def test_healthy_open_loop_is_valid() -> None:
    assert (
        invalid_open_loop(
            requested_rate=300.0,
            completed=2_990,
            seconds=10.0,
            generator_cpu_seconds=1.0,
            steady_p99=0.012,
            unloaded=0.002,
        )
        is None
    )


@pytest.mark.parametrize(("cpu", "invalid"), [(0.5, False), (0.95, True)])
def test_closed_loop_generator_at_a_full_core_is_invalid(cpu: float, invalid: bool) -> None:
    reason = invalid_closed_loop(generator_cpu_seconds=cpu * 4.0, seconds=4.0)
    assert (reason is not None) is invalid


def test_table_names_invalid_rows_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    good = Result(1, "fine", 1.0, 2.0, "ok")
    shaky = Result(5, "starvation", 1.1, 2.0, "1 ms vs 1 ms", "load generator held 10 of 60")
    bad = Result(6, "slow", 3.0, 2.0, "no")
    print_table([good, shaky])
    out = capsys.readouterr().out
    assert "| 5 | starvation | 1.10x | 2x | INVALID |" in out
    assert "1 INVALID row(s)" in out and "- #5 starvation: load generator held 10 of 60" in out
    assert exit_code([good]) == 0
    assert exit_code([good, shaky]) == 2
    assert exit_code([good, shaky, bad]) == 1
