"""Instructions per item of a request frame's primitives: the row frame of the compiled
core against a column frame's list operations: ``python -m benchmarks.frame_primitives``.

The row frame (``pineapple.engine._frame`` and ``_io``, compiled by mypyc) holds
one dict per item; a column frame would hold one list per field. Each
primitive runs on ``ITEMS`` items of ``FIELDS`` fields (the shape of
``large_1000``'s recalled items) inside a child interpreter under ``valgrind
--tool=callgrind``, ``SHORT`` and ``LONG`` times (``PYTHONHASHSEED=0``); the
difference of the two counts divided by ``(LONG - SHORT) * ITEMS`` is its
cost per item. The column side is written with CPython's C-level list
operations (``list``, ``itertools.compress``, ``map``), what a compiled
column frame would call; it runs interpreted here, so its figures include
the few hundred instructions of one interpreted call per primitive (well
under one instruction per item). Bounds: each child stops after ``TIMEOUT``
seconds; at most two run at once.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import compress
from typing import Any

from .instructions import TIMEOUT, child_environment

__all__ = ["PRIMITIVES", "main", "per_item"]

ITEMS = 1000
FIELDS = 6
SHORT, LONG = 20, 220
_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")

Rows = list[dict[str, Any]]
Cols = dict[str, list[Any]]


def _rows() -> Rows:
    return [
        {f"f{k}": float(i * FIELDS + k) for k in range(FIELDS)} for i in range(ITEMS)
    ]  # bounded: ITEMS x FIELDS


def _cols(rows: Rows) -> Cols:
    return {f"f{k}": [row[f"f{k}"] for row in rows] for k in range(FIELDS)}


def _setup() -> tuple[Rows, Cols, list[float], set[int], list[int], list[bool]]:
    rows = _rows()
    values = [float(i) for i in range(ITEMS)]
    removed = set(range(0, ITEMS, 2))
    order = list(range(ITEMS - 1, -1, -1))
    keep = [i % 2 == 1 for i in range(ITEMS)]
    return rows, _cols(rows), values, removed, order, keep


def _row_primitives() -> dict[str, Callable[[], object]]:
    from pineapple.engine import _frame, _io

    rows, _, values, removed, order, _ = _setup()

    def copy_write() -> object:
        copied = [dict(row) for row in rows]
        _frame._set_column(copied, "new", values)
        return copied

    return {
        "copy every item (recall)": lambda: [dict(row) for row in rows],
        "copy every item, then write a new field": copy_write,
        "overwrite a field": lambda: _frame._set_column(rows, "f1", values),
        "read a column": lambda: _io._column(rows, "f2", None, 0, ITEMS),
        "remove every second item": lambda: _frame._remove(rows, removed),
        "reverse the order": lambda: _frame._reorder(rows, order),
        "answer two fields": lambda: _frame.project({}, rows, (), ("f0", "f3")),
    }


def _column_primitives() -> dict[str, Callable[[], object]]:
    from pineapple.engine import _frame

    _, cols, values, _, order, keep = _setup()

    def write(target: Cols, field: str) -> None:
        if _frame._first_bad(values) >= 0:  # the NaN/Inf check the row frame makes too
            raise ValueError(field)
        target[field] = values  # the operator's list is adopted

    def copy_write() -> object:
        copied = {f: list(col) for f, col in cols.items()}
        write(copied, "new")
        return copied

    return {
        "copy every item (recall)": lambda: {f: list(col) for f, col in cols.items()},
        "copy every item, then write a new field": copy_write,
        "overwrite a field": lambda: write(cols, "f1"),
        "read a column": lambda: list(cols["f2"]),
        "remove every second item": lambda: {
            f: list(compress(col, keep)) for f, col in cols.items()
        },
        "reverse the order": lambda: {
            f: list(map(col.__getitem__, order)) for f, col in cols.items()
        },
        "answer two fields": lambda: [
            {"f0": a, "f3": b} for a, b in zip(cols["f0"], cols["f3"], strict=True)
        ],
    }


PRIMITIVES = (
    "copy every item (recall)",
    "copy every item, then write a new field",
    "overwrite a field",
    "read a column",
    "remove every second item",
    "reverse the order",
    "answer two fields",
)
"""The primitives measured, in table order."""


def _child(side: str, primitive: str, runs: int) -> None:
    table = _row_primitives() if side == "rows" else _column_primitives()
    run = table[primitive]
    for _ in range(5 + runs):  # bounded: runs
        run()


def _refs(side: str, primitive: str, runs: int) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.frame_primitives",
        "--child",
        side,
        primitive,
        str(runs),
    ]
    done = subprocess.run(
        command, env=child_environment(pure=False), capture_output=True, timeout=TIMEOUT, check=True
    )
    found = _REFS.search(done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count for {side}: {primitive}")
    return int(found.group(1).replace(b",", b""))


def per_item(side: str, primitive: str) -> float:
    """Instructions per item of one primitive (see the module docstring)."""
    with ThreadPoolExecutor(2) as pool:
        short, long = pool.map(lambda runs: _refs(side, primitive, runs), (SHORT, LONG))
    return (long - short) / ((LONG - SHORT) * ITEMS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.frame_primitives", description=__doc__
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("SIDE", "PRIMITIVE", "RUNS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    from pineapple import _native

    if not _native.compiled():
        print(f"the engine core runs as Python: {_native.pure_reason()}", file=sys.stderr)
        return 2
    head = f"primitive ({ITEMS} items of {FIELDS} fields)"
    print(f"| {head} | rows (compiled) | columns | rows / columns |")
    print("|---|---|---|---|")
    for primitive in PRIMITIVES:  # bounded: the primitives
        rows, cols = per_item("rows", primitive), per_item("columns", primitive)
        ratio = f"{rows / cols:.1f}x" if cols > 0 else "-"
        print(f"| {primitive} | {rows:,.1f} | {cols:,.1f} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
