"""Our engine against the public project's removed Python engine, side by side.

The old engine (``pine-python/`` of github.com/Liam0205/pineapple at commit
``56c44af6^``) is not part of this repository: check it out anywhere and
pass its directory (the one holding ``pine/``)::

    python -m benchmarks.engine_vs_old --old-engine /path/to/pine-python

Each fixture pair of ``$PINE_FIXTURES_DIR/benchmarks`` is run by both engines
in interleaved rounds; the table gives executions per second and the ratio
(target: ours >= 5x on every row).

The five ``realistic_*`` configs need the public engines' benchmark stub
operators, which the old engine does not have: they run on our side only,
on :func:`pineapple.operators.bench.bench_operator_registry`, without the
stubs' simulated latency unless ``--stub-latency`` (then a row measures
mostly the profiles' sleeps). Without ``--old-engine`` every row is ours only.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

import orjson

from ._measure import interleaved

__all__ = ["FIXTURES", "compare"]

FIXTURES = ["small_010", "small_100", "medium_0100", "medium_1000", "large_1000"]
REALISTIC = [
    "realistic_for_you",
    "realistic_for_you_calibrated",
    "realistic_for_you_calibrated_2c4g",
    "realistic_for_you_calibrated_itemlua",
    "realistic_for_you_latency",
]
"""Configs of business operators: ours only, on the benchmark stubs."""
TARGET = 5.0


def _fixtures_dir() -> Path:
    root = Path(os.environ.get("PINE_FIXTURES_DIR", "../shared/fixtures/pineapple"))
    return root / "benchmarks"


def _load(name: str) -> tuple[bytes, dict[str, Any]]:
    base = _fixtures_dir()
    config = (base / f"{name}_config.json").read_bytes()
    request = orjson.loads((base / f"{name}_request.json").read_bytes())
    return config, request


def _ours(config: bytes, request: dict[str, Any], registry: Any = None) -> Any:
    from pineapple import Context, builtins
    from pineapple.engine import Engine

    engine = Engine(config, registry=registry or builtins.operator_registry())
    ctx = Context()
    probe = copy.deepcopy(request)
    engine.execute(ctx, probe)
    if probe != request:  # pragma: no cover - our engine never mutates its input
        return lambda: engine.execute(ctx, copy.deepcopy(request))
    return lambda: engine.execute(ctx, request)


def _old(config: bytes, request: dict[str, Any]) -> Any:
    from pine.engine import Engine as OldEngine  # type: ignore[import-not-found]

    engine = OldEngine.create(config)
    common, items = request.get("common", {}), request.get("items", [])
    probe_common, probe_items = copy.deepcopy(common), copy.deepcopy(items)
    engine.execute(probe_common, probe_items)
    if (probe_common, probe_items) != (common, items):
        # It mutates its input: give it a fresh copy each call, and say so.
        return lambda: engine.execute(copy.deepcopy(common), copy.deepcopy(items)), True
    return lambda: engine.execute(common, items), False


def _ours_only(name: str, rounds: int, registry: Any = None) -> float:
    config, request = _load(name)
    ours = _ours(config, request, registry)
    probe = interleaved({"ours": ours}, rounds=1)["ours"]
    number = max(1, int(0.05 / max(probe, 1e-6)))
    return 1 / interleaved({"ours": ours}, rounds=rounds, number=number)["ours"]


def realistic(rounds: int = 9, *, stub_latency: bool = False) -> list[tuple[str, float, str]]:
    """``(fixture, ours/s, note)`` per realistic config, on the benchmark stubs."""
    from pineapple.operators.bench import bench_operator_registry

    note = "stubs" + (" with their latency profiles" if stub_latency else ", latency off")
    return [
        (name, _ours_only(name, rounds, bench_operator_registry(latency=stub_latency)), note)
        for name in REALISTIC
    ]


def compare(old_engine_dir: Path | None, rounds: int = 9) -> list[tuple[str, float, float, str]]:
    """``(fixture, ours/s, old/s, note)`` per fixture (old/s is 0 without the old engine)."""
    if old_engine_dir is None:
        return [(name, _ours_only(name, rounds), 0.0, "") for name in FIXTURES]
    sys.path.insert(0, str(old_engine_dir))
    rows = []
    for name in FIXTURES:
        config, request = _load(name)
        ours = _ours(config, request)
        old, copies = _old(config, request)
        # Aim at ~50 ms per sample for the slower engine.
        probe = interleaved({"old": old}, rounds=1)["old"]
        number = max(1, int(0.05 / max(probe, 1e-6)))
        t = interleaved({"ours": ours, "old": old}, rounds=rounds, number=number)
        note = "old engine given a fresh copy per call (it mutates its input)" if copies else ""
        rows.append((name, 1 / t["ours"], 1 / t["old"], note))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_vs_old")
    parser.add_argument("--old-engine", type=Path, help="pine-python directory (none: ours only)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--stub-latency",
        action="store_true",
        help="realistic rows: let the stubs spend their bench_profile latency",
    )
    args = parser.parse_args(argv)
    if args.old_engine is not None and not (args.old_engine / "pine" / "engine.py").exists():
        parser.error(f"{args.old_engine} does not hold pine/engine.py")
    rows = compare(args.old_engine, args.rounds)
    print("| fixture | ours exec/s | old exec/s | ratio | target | result |")
    print("|---|---|---|---|---|---|")
    ok = True
    for name, ours, old, note in rows:
        if not old:
            print(f"| {name} | {ours:,.0f} | - | - | >= {TARGET:g}x | ours only |")
            continue
        ratio = ours / old
        ok &= ratio >= TARGET
        verdict = "PASS" if ratio >= TARGET else "FAIL"
        extra = f" ({note})" if note else ""
        cells = [name, f"{ours:,.0f}", f"{old:,.0f}", f"{ratio:.1f}x", f">= {TARGET:g}x"]
        print("| " + " | ".join(cells) + f" | {verdict}{extra} |")
    for name, ours, note in realistic(args.rounds, stub_latency=args.stub_latency):
        print(f"| {name} | {ours:,.0f} | - | - | - | ours only ({note}; old engine lacks them) |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
