"""Run every performance target and print the table of ratios (``make bench``)."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Callable

from ._measure import Result

# (module, function) per target group, in target order.
SUITES: list[tuple[str, str]] = [
    ("benchmarks.borrow", "uncontended_borrow"),
    ("benchmarks.borrow", "contended_borrow"),
    ("benchmarks.borrow", "mapped_borrow"),
    ("benchmarks.reload", "reload_carry_over"),
    ("benchmarks.refresh", "refresh_cost"),
    ("benchmarks.starvation", "refresh_starvation"),
    ("benchmarks.serving", "serving"),
    ("benchmarks.shadow", "shadow_cost"),
    ("benchmarks.lookup", "resource_lookup"),
    ("benchmarks.large_request", "large_request"),
    ("benchmarks.masking", "masking"),
    ("benchmarks.shared_table", "shared_table"),
    ("benchmarks.workers", "worker_throughput"),
    ("benchmarks.workers", "database_reads"),
    ("benchmarks.pinning", "pinned_serving"),
    ("benchmarks.engine_cost", "engine_cost"),
    ("benchmarks.native", "native_core"),
    ("benchmarks.fleet", "fleet"),
]


def _run(module: str, function: str) -> list[Result]:
    fn: Callable[[], list[Result]] = getattr(importlib.import_module(module), function)
    return fn()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--only", help="run only suites whose function name contains this")
    args = parser.parse_args(argv)
    rows: list[Result] = []
    for module, function in SUITES:
        if args.only and args.only not in function:
            continue
        print(f"running {function} ...", file=sys.stderr, flush=True)
        try:
            rows.extend(_run(module, function))
        except Exception as exc:
            traceback.print_exc()
            rows.append(Result(0, function, None, 0.0, f"could not run: {exc}"))
    print_table(rows)
    return exit_code(rows)


def print_table(rows: list[Result]) -> None:
    """The Markdown table, then one line per INVALID row with its reason."""
    print("| # | target | measured | limit | result | detail |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        measured = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        detail = f"{r.detail}; INVALID: {r.invalid}" if r.invalid else r.detail
        print(f"| {r.number} | {r.name} | {measured} | {r.limit:.3g}x | {r.verdict} | {detail} |")
    invalid = [r for r in rows if r.verdict == "INVALID"]
    if invalid:
        print(f"\n{len(invalid)} INVALID row(s), neither PASS nor FAIL (the run did not hold):")
        for r in invalid:
            print(f"- #{r.number} {r.name}: {r.invalid}")


def exit_code(rows: list[Result]) -> int:
    """0: every row PASS; 1: a row FAIL or not measured (n/a); 2: otherwise some INVALID."""
    verdicts = {r.verdict for r in rows}
    if verdicts <= {"PASS"}:
        return 0
    if verdicts & {"FAIL", "n/a"}:
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
