"""Work over many items in pieces, so that no single C call holds the GIL for long.

The server runs a large request on a worker thread while the event loop
keeps answering other requests. CPython switches threads only between
bytecodes: one C call over 280,000 items (``sorted``, ``min``, ``set``,
``list(map(...))``, freeing a list) keeps the event loop waiting for all of
its 50 to 400 ms. The helpers here split such calls into pieces of at most
:data:`PIECE` items; between two pieces the interpreter may hand the GIL
over. Each takes the plain one-call path when the input fits in one piece,
so that small requests run exactly the code they ran before.

This module stays interpreted when the engine core is compiled
(``pineapple._native``): compiled code never checks for a waiting thread
itself, so its loops over many items take their pieces from :func:`spans`
or :func:`pieces`, whose every next piece passes through the interpreter
(where the GIL may be handed over).

Guarantees:

- Results equal those of the one-call forms they replace (``stable_order``
  is ``sorted(range(n), key=keys.__getitem__, reverse=reverse)``, ties kept
  in input order).
- Every loop is bounded by the input: at most ``len / PIECE`` pieces; a sort
  makes ``log(len / PIECE) / log(FAN_IN)`` merge rounds of at most
  ``len * FAN_IN / PIECE + FAN_IN`` turns each.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar

__all__ = ["FAN_IN", "PIECE", "batches", "pieces", "release", "spans", "stable_order"]

T = TypeVar("T")

PIECE = 4096
"""Most items one C call handles here: a piece costs well under 5 ms (the switch interval)."""


def pieces(seq: Sequence[T], size: int = PIECE) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``seq`` of at most ``size`` items (bounded: ``len(seq) / size``)."""
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def spans(n: int, size: int = PIECE) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive pieces of ``range(n)`` (bounded: ``n / size`` pieces).

    A generator run by the interpreter: a compiled loop over its pieces lets
    other threads run between two of them.
    """
    for start in range(0, n, size):
        yield start, min(start + size, n)


def batches(values: Iterable[T], size: int = PIECE) -> Iterator[list[T]]:
    """The items of ``values`` in lists of at most ``size`` (bounded by the input's length)."""
    it = iter(values)
    while part := list(islice(it, size)):
        yield part


def release(items: list[Any], size: int = PIECE) -> None:
    """Empty ``items`` from the end, ``size`` at a time, so that freeing its values is spread.

    Only for a list its caller owns: whoever else holds the list sees it empty.
    """
    while items:  # bounded: len(items) / size turns
        del items[-size:]


def stable_order(keys: Sequence[Any], *, reverse: bool = False, size: int = PIECE) -> list[int]:
    """``sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)`` in pieces.

    Sorts runs of ``size`` indices, then merges up to :data:`FAN_IN` neighbouring
    runs at a time in pieces of at most ``size`` (see :func:`_merge`). ``keys``
    must be totally ordered (numbers without NaN, or strings). Descending order
    is the ascending order of the reversed indices, reversed: equal keys keep
    their input order, as with ``sorted``. A compiled caller may make the
    one-piece call itself (``reorder_sort`` does, to spare this interpreted
    frame; its test checks both paths agree): keep the two alike.
    """
    n = len(keys)
    key: Callable[[int], Any] = keys.__getitem__
    if n <= size:
        return sorted(range(n), key=key, reverse=reverse)
    if reverse:
        runs = [
            sorted(range(end - 1, max(end - size, 0) - 1, -1), key=key)
            for end in range(n, 0, -size)
        ]
    else:
        runs = [sorted(range(start, min(start + size, n)), key=key) for start in range(0, n, size)]
    while len(runs) > 1:  # bounded: log(n / size) / log(FAN_IN) rounds
        runs = [_merge(runs[i : i + FAN_IN], key, size) for i in range(0, len(runs), FAN_IN)]
    order = runs[0]
    if reverse:
        order.reverse()
    return order


FAN_IN = 16
"""Runs merged together: fewer rounds over the keys, ``size / FAN_IN`` items per run a turn."""


def _merge(runs: list[list[int]], key: Callable[[int], Any], size: int) -> list[int]:
    """Merge sorted runs (on equal keys, earlier runs first), at most ``size`` items a turn.

    A turn looks at the next ``step`` items of each run; the pivot is the
    lowest of their last keys, from the first run ``m`` that has it. It takes
    those ``step`` items of run ``m``, the items not above the pivot from the
    runs before ``m`` and the items below it from the runs after ``m`` (each
    fewer than ``step``, by the choice of the pivot), and sorts them. What is
    left sorts after what was taken: the next turn continues from there.
    """
    step = max(1, size // len(runs))
    runs = [run for run in runs if run]
    starts = [0] * len(runs)
    out: list[int] = []
    while len(runs) > 1:  # bounded: each turn takes `step` items of a run, or its rest
        ends = [min(start + step, len(run)) for run, start in zip(runs, starts, strict=True)]
        m, pivot = 0, key(runs[0][ends[0] - 1])
        for r in range(1, len(runs)):  # bounded: FAN_IN runs
            last = key(runs[r][ends[r] - 1])
            if last < pivot:
                m, pivot = r, last
        taken: list[int] = []
        for r, run in enumerate(runs):  # bounded: FAN_IN runs
            start = starts[r]
            if r < m:
                end = bisect_right(run, pivot, start, ends[r], key=key)
            elif r == m:
                end = ends[r]
            else:
                end = bisect_left(run, pivot, start, ends[r], key=key)
            taken += run[start:end]
            starts[r] = end
        out += sorted(taken, key=key)
        if any(start == len(run) for run, start in zip(runs, starts, strict=True)):
            kept = [r for r, run in enumerate(runs) if starts[r] < len(run)]
            runs = [runs[r] for r in kept]
            starts = [starts[r] for r in kept]
    if runs:
        for rest in pieces(runs[0][starts[0] :], size):  # bounded: len / size pieces
            out += rest
    return out
