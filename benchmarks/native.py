"""Issue 23: the compiled engine core against its pure-Python fallback, in one process.

For each fixture, the same config runs in an ``Engine`` of this process's
compiled core and in one of a :class:`pineapple._native.PureCopy` (the
package loaded a second time, from source). Interleaved batches, process CPU
time, the median of per-round ratios. Target: the compiled core at least 3x
the executions per second of the fallback on the big requests (``large_1000``,
``medium_1000``: issue 38) and 2x on the rest (shown as compiled time / pure
time, limit 1/3 or 0.5).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from ._measure import Result, median
from .serving import fixtures_dir

__all__ = ["FIXTURES", "native_core"]

FIXTURES = ("small_010", "medium_0100", "medium_1000", "large_1000")
TIMES = {"medium_1000": 3, "large_1000": 3}
"""Fixtures whose target is more than 2x executions/s, and their factor."""
NAME = "compiled engine core: time per execution, compiled / pure-Python fallback, {}"


def _batch(run: Any, ctx: Any, request: Any, number: int) -> float:
    clock = time.process_time
    started = clock()
    for _ in range(number):  # bounded: number
        run(ctx, request)
    return clock() - started


def native_core(rounds: int = 9, seconds: float = 0.1) -> list[Result]:
    """One row per fixture (see the module docstring)."""
    from pineapple import Context, _native, builtins
    from pineapple.engine import Engine

    bench = fixtures_dir() / "benchmarks"
    if not _native.compiled():
        reason = f"the compiled core does not run here: {_native.pure_reason()}"
        return [Result(23, NAME.format(f), None, 1 / TIMES.get(f, 2), reason) for f in FIXTURES]
    pure = _native.PureCopy()
    rows = []
    for fixture in FIXTURES:
        times_target = TIMES.get(fixture, 2)
        limit = 1 / times_target
        config = bench / f"{fixture}_config.json"
        if not config.is_file():
            rows.append(Result(23, NAME.format(fixture), None, limit, f"{config} absent"))
            continue
        raw = config.read_bytes()
        request = orjson.loads((bench / f"{fixture}_request.json").read_bytes())
        own = Engine(raw, registry=builtins.operator_registry())
        with pure:
            other = pure.module("pineapple.engine").Engine(
                raw, registry=pure.module("pineapple.builtins").operator_registry()
            )
            other_ctx = pure.module("pineapple").Context()
        ctx = Context()
        # Batches of about `seconds` of the compiled side.
        number = max(1, int(seconds / max(_batch(own.run, ctx, request, 20) / 20, 1e-7)))
        ratios: list[float] = []
        times: dict[str, list[float]] = {"compiled": [], "pure": []}
        for r in range(rounds):  # bounded: rounds
            got = {}
            for side in ("compiled", "pure") if r % 2 == 0 else ("pure", "compiled"):
                if side == "pure":
                    with pure:
                        got[side] = _batch(other.run, other_ctx, request, number)
                else:
                    got[side] = _batch(own.run, ctx, request, number)
                times[side].append(got[side] / number)
            ratios.append(got["compiled"] / got["pure"])
        own.close()
        with pure:
            other.close()
        c, p = median(times["compiled"]), median(times["pure"])
        rows.append(
            Result(
                23,
                NAME.format(fixture)
                + f" (target >= {times_target}x executions/s, shown as <= {limit:.2g}x time)",
                median(ratios),
                limit,
                f"compiled {1 / c:,.0f}/s ({c * 1e6:,.1f} us), pure {1 / p:,.0f}/s "
                f"({p * 1e6:,.1f} us): {p / c:.2f}x (CPU time, {rounds} rounds)",
            )
        )
    return rows
