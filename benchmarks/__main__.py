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
    ("benchmarks.reload", "reload_carry_over"),
    ("benchmarks.refresh", "refresh_cost"),
    ("benchmarks.starvation", "refresh_starvation"),
    ("benchmarks.serving", "serving"),
    ("benchmarks.lookup", "resource_lookup"),
    ("benchmarks.large_request", "large_request"),
    ("benchmarks.masking", "masking"),
    ("benchmarks.shared_table", "shared_table"),
    ("benchmarks.engine_cost", "engine_cost"),
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
    print("| # | target | measured | limit | result | detail |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        measured = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        print(f"| {r.number} | {r.name} | {measured} | {r.limit:.3g}x | {r.verdict} | {r.detail} |")
    return 0 if all(r.verdict == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
