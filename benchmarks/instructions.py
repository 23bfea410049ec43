"""Instructions per engine execution, compiled core and pure-Python fallback: ``python -m
benchmarks.instructions [fixture ...]``.

Each count is that of a child interpreter under ``valgrind --tool=callgrind``
running the fixture's request ``LONG`` times, less that of one running it
``SHORT`` times (start-up, config load and warm-up cancel out), divided by
``LONG - SHORT``; ``PYTHONHASHSEED=0`` makes a count repeat to a few
instructions. Unlike a timed ratio (``--only native_core``) it does not move
with the machine's load; it does not see memory stalls either, which cost
the compiled side proportionally more. Bounds: each child stops after
``TIMEOUT`` seconds; at most two run at once.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from .native import FIXTURES
from .serving import fixtures_dir

__all__ = ["LONG", "SHORT", "TIMEOUT", "child", "child_environment", "count", "main"]

SHORT, LONG = 20, 120
TIMEOUT = 900.0
_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")


def child(fixture: str, runs: int) -> None:
    """Load the fixture's engine, warm it up, then run its request ``runs`` times.

    ``realistic_*`` fixtures build on the benchmark stubs without their
    latency (``pineapple.operators.bench``) and run without resources (the
    Redis operators' borrow fails and degrades, as documented).
    """
    import orjson

    from pineapple import Context, builtins
    from pineapple.engine import Engine
    from pineapple.operators.bench import bench_operator_registry

    bench = fixtures_dir() / "benchmarks"
    registry = (
        bench_operator_registry(latency=False)
        if fixture.startswith("realistic_")
        else builtins.operator_registry()
    )
    engine = Engine((bench / f"{fixture}_config.json").read_bytes(), registry=registry)
    request = orjson.loads((bench / f"{fixture}_request.json").read_bytes())
    ctx = Context()
    for _ in range(10 + runs):  # bounded: runs
        engine.run(ctx, request)


def child_environment(pure: bool) -> dict[str, str]:
    """A child's environment: ``PYTHONHASHSEED=0``, the compiled core or the pure one."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PINEAPPLE_PURE_PYTHON", None)
    if pure:
        env["PINEAPPLE_PURE_PYTHON"] = "1"
    return env


def _refs(fixture: str, runs: int, pure: bool) -> int:
    env = child_environment(pure)
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        "--child",
        fixture,
        str(runs),
    ]
    done = subprocess.run(command, env=env, capture_output=True, timeout=TIMEOUT, check=True)
    found = _REFS.search(done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count for {fixture}")
    return int(found.group(1).replace(b",", b""))


def count(fixture: str, pure: bool) -> int:
    """Instructions per execution of ``fixture``'s request (see the module docstring)."""
    with ThreadPoolExecutor(2) as pool:
        short, long = pool.map(lambda runs: _refs(fixture, runs, pure), (SHORT, LONG))
    return (long - short) // (LONG - SHORT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__)
    parser.add_argument("fixtures", nargs="*", default=list(FIXTURES))
    parser.add_argument("--child", nargs=2, metavar=("FIXTURE", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    print("| fixture | compiled | pure | pure / compiled |")
    print("|---|---|---|---|")
    for fixture in args.fixtures:  # bounded: the fixtures named
        compiled, pure = count(fixture, pure=False), count(fixture, pure=True)
        print(f"| {fixture} | {compiled:,} | {pure:,} | {pure / compiled:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
