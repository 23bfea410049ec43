"""Where one engine execution's instructions go, compiled core: ``python -m
benchmarks.instruction_profile [fixture ...] [--top N]``.

As :mod:`benchmarks.instructions`, two child interpreters run the fixture's
request ``SHORT`` and ``LONG`` times (fewer than there: callgrind's
profile is slower than its count, and the counts repeat) under ``valgrind --tool=callgrind``
(``PYTHONHASHSEED=0``), here collecting only inside the compiled
``Engine.run`` (``--toggle-collect``): per function, the two profiles'
difference divided by ``LONG - SHORT`` is its share of one execution
(warm-up and first-run work cancel out). Printed per fixture:

- the execution's total;
- *compiled functions, inclusive*: each compiled function of the core (mypyc's
  ``CPyDef_`` symbols, shown as ``module.function``) with everything it calls;
- *every function, self*: the instructions executed in the function's own
  code, whichever library it is in (CPython's dict and object work, lupa,
  the Lua VM, the compiled core).

Bounds: each child stops after ``--timeout`` seconds; at most two run at once;
``--top`` rows per table.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .instructions import TIMEOUT, child_environment

__all__ = ["Profile", "main", "parse_annotation", "profile"]

SHORT, LONG = 5, 25

ENTRY = "CPyPy__engine___Engine___run"
"""The compiled ``Engine.run``'s entry from interpreted code: collection is on inside it."""

FIXTURES = (
    "large_1000",
    "medium_1000",
    "realistic_for_you_calibrated",
    "realistic_for_you_calibrated_itemlua",
)

_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$")
_OBJECT = re.compile(r"\s+\[([^\]]*)\]$")

Profile = dict[str, float]
"""``function -> instructions per execution``."""


def _callgrind(fixture: str, runs: int, out: Path, timeout: float) -> None:
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--toggle-collect={ENTRY}",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        "--child",
        fixture,
        str(runs),
    ]
    env = child_environment(pure=False)
    subprocess.run(command, env=env, capture_output=True, timeout=timeout, check=True)


def _name(entry: str) -> str:
    """``file:function [object]`` -> ``function``; code without a symbol -> its object's name.

    Parts of one function (lines inlined from headers, a recursion cycle's
    ``'2`` entries) get the one name, so their counts add up.
    """
    found = _OBJECT.search(entry)
    where = Path(found.group(1)).name if found else "?"
    function = _OBJECT.sub("", entry).rsplit(":", 1)[-1].split("'")[0]
    return f"(no symbol) {where}" if function.startswith("0x") else function


def _annotate(path: Path, inclusive: bool) -> dict[str, int]:
    command = [
        "callgrind_annotate",
        f"--inclusive={'yes' if inclusive else 'no'}",
        "--threshold=100",
        "--auto=no",
        str(path),
    ]
    text = subprocess.run(command, capture_output=True, timeout=TIMEOUT, check=True).stdout
    return parse_annotation(text.decode(errors="replace"), inclusive)


def parse_annotation(text: str, inclusive: bool) -> dict[str, int]:
    """``function -> instructions`` from ``callgrind_annotate --auto=no`` output.

    A function's parts (see :func:`_name`) add up for self counts; for
    inclusive ones each part already holds the whole, so the largest is kept.
    """
    counts: dict[str, int] = {}
    for line in text.splitlines():  # bounded: the file's lines
        found = _LINE.match(line)
        if found is None or "PROGRAM TOTALS" in line:
            continue
        name = _name(found.group(2))
        if inclusive and ("'" in found.group(2) or name.startswith("(no symbol)")):
            continue  # a cycle's second entry (counted in its first); code with no name
        value = int(found.group(1).replace(",", ""))
        counts[name] = max(counts.get(name, 0), value) if inclusive else counts.get(name, 0) + value
    return counts


def _per_execution(short: dict[str, int], long: dict[str, int], runs: int) -> Profile:
    return {
        name: (long.get(name, 0) - short.get(name, 0)) / runs for name in set(short) | set(long)
    }


def profile(
    fixture: str, short: int = SHORT, long: int = LONG, timeout: float = TIMEOUT
) -> tuple[Profile, Profile]:
    """``(inclusive, self)`` instructions per execution of ``fixture``, by function."""
    with tempfile.TemporaryDirectory(prefix="pineapple-profile-") as tmp:
        paths = {runs: Path(tmp) / f"callgrind.{runs}" for runs in (short, long)}
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda runs: _callgrind(fixture, runs, paths[runs], timeout), paths))
        inclusive = _per_execution(
            _annotate(paths[short], inclusive=True),
            _annotate(paths[long], inclusive=True),
            long - short,
        )
        own = _per_execution(
            _annotate(paths[short], inclusive=False),
            _annotate(paths[long], inclusive=False),
            long - short,
        )
    return inclusive, own


def _compiled_name(name: str) -> str | None:
    """``CPyDef__frame___apply_output`` -> ``_frame.apply_output``; None: not compiled."""
    if not name.startswith("CPyDef_"):
        return None
    return name[len("CPyDef_") :].replace("___", ".")


def _table(title: str, rows: list[tuple[str, float]], total: float) -> None:
    print(f"\n| {title} | per execution | share |")
    print("|---|---|---|")
    for name, value in rows:  # bounded: --top
        print(f"| `{name}` | {value:,.0f} | {value / total:.1%} |")


def _top(counts: Profile, top: int, rename: Callable[[str], str | None]) -> list[tuple[str, float]]:
    named = [(new, value) for name, value in counts.items() if (new := rename(name)) is not None]
    return sorted(named, key=lambda row: -row[1])[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.instruction_profile", description=__doc__
    )
    parser.add_argument("fixtures", nargs="*", default=list(FIXTURES))
    parser.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    parser.add_argument(
        "--runs",
        nargs=2,
        type=int,
        default=(SHORT, LONG),
        metavar=("SHORT", "LONG"),
        help=f"executions of the two children (default {SHORT} {LONG})",
    )
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT, help=f"seconds per child (default {TIMEOUT:g})"
    )
    args = parser.parse_args(argv)
    short, long = args.runs
    if not 0 <= short < long or args.timeout <= 0:
        parser.error("--runs needs 0 <= SHORT < LONG; --timeout must be > 0")
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("valgrind (callgrind_annotate) is not installed", file=sys.stderr)
        return 2
    from pineapple import _native

    if not _native.compiled():
        print(f"the engine core runs as Python: {_native.pure_reason()}", file=sys.stderr)
        return 2
    for fixture in args.fixtures:  # bounded: the fixtures named
        inclusive, own = profile(fixture, short, long, args.timeout)
        total = sum(own.values())
        print(f"\n### {fixture}: {total:,.0f} instructions per execution (compiled core)")
        _table("compiled function, inclusive", _top(inclusive, args.top, _compiled_name), total)
        _table("function (library), self", _top(own, args.top, lambda name: name), total)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
