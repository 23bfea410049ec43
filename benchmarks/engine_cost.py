"""Issue 13's cost bounds, side by side in one run: per-operator metrics and the trace path.

Row 10, per-operator metrics: engine executions per second on the
``small_010`` fixture with the engine's counters on (``Engine()``: exact
counts, durations sampled one run in 64, at most 20 a second) against a stats-free
``Engine(stats=False)``, interleaved in one process, CPU time, median of
per-round ratios. Bound: the counting engine takes at most 1.05x the time.

Row 11, the trace path: ``/execute`` on ``small_010`` as the server runs it
(``respond()``: parse, run, encode; the request has no ``_return_trace``)
against the same minus the work the trace feature adds when the flag is
absent (the ``common.get("_return_trace") is True`` check and the engine's
``trace`` test, measured alongside as a call of its own, so the estimate
errs high by one call). Bound: 1.03x.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ._measure import Result, paired

__all__ = ["engine_cost"]

FIXTURE = "small_010"
METRICS_LIMIT = 1.05
TRACE_LIMIT = 1.03
NAME_METRICS = f"per-operator metrics: engine time on {FIXTURE}, stats on / off"
NAME_TRACE = f"trace path: /execute time on {FIXTURE} without the flag, with / without it"


def _fixture() -> tuple[bytes, bytes] | None:
    root = Path(os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple"))
    config, request = (
        root / "benchmarks" / f"{FIXTURE}_{kind}.json" for kind in ("config", "request")
    )
    if not (config.is_file() and request.is_file()):
        return None
    return config.read_bytes(), request.read_bytes()


def _trace_check(common: dict[str, Any], trace: bool = False) -> bool:
    # The trace path's work on an untraced request: respond's flag check and
    # the engine's ``timed or trace`` test.
    traced = common is not None and common.get("_return_trace") is True
    return traced or trace


def engine_cost() -> list[Result]:
    """Rows 10 and 11 (see the module docstring)."""
    from pineapple import Context, builtins
    from pineapple.engine import Engine
    from pineapple.engine.http import respond

    fixture = _fixture()
    if fixture is None:
        reason = f"fixture {FIXTURE} absent (set PINE_FIXTURES_DIR)"
        return [
            Result(10, NAME_METRICS, None, METRICS_LIMIT, reason),
            Result(11, NAME_TRACE, None, TRACE_LIMIT, reason),
        ]
    config, body = fixture
    request = orjson.loads(body)
    ops = builtins.operator_registry()
    off, on = Engine(config, registry=ops, stats=False), Engine(config, registry=ops)
    ctx = Context()
    common: dict[str, Any] = dict(request["common"])
    try:
        per_call, ratios = paired(
            {
                "off": lambda: off.run(ctx, request),
                "on": lambda: on.run(ctx, request),
                "served": lambda: respond(on, ctx, body),
                "check": lambda: _trace_check(common),
            }
        )
    finally:
        off.close()
        on.close()
    served, check = per_call["served"], per_call["check"]
    trace_ratio = served / (served - check) if served > check else None
    return [
        Result(
            10,
            NAME_METRICS,
            ratios["on"],
            METRICS_LIMIT,
            f"on {1 / per_call['on']:,.0f}/s, off {1 / per_call['off']:,.0f}/s (CPU time)",
        ),
        Result(
            11,
            NAME_TRACE,
            trace_ratio,
            TRACE_LIMIT,
            f"/execute {served * 1e6:.1f} us, trace path {check * 1e9:.0f} ns of it",
        ),
    ]
