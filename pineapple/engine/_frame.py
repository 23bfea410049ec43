"""Building operator inputs from the request frame and applying operator outputs to it.

The frame is a plain ``common`` dict and the items as columns (``_columns.Frame``),
owned by one request (copied from the request on entry). Errors raised here
are ``FrameError``; the runner wraps them into ``ExecutionError`` naming the
operator, with the same texts as the public engines.

The per-item loops are written out plainly because mypyc compiles this
module (``pineapple._native``) into C loops; past :data:`PIECE` items they
run piece by piece (``spans``), so that no loop holds the GIL for more than
one piece.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from ._answer import AnswerBytes, value_bytes
from ._columns import Frame, dict_rows
from ._io import OperatorInput, OperatorOutput
from ._pieces import PIECE, batches, spans
from ._step import Step
from ._template import resolve_templates

__all__ = [
    "SOURCE_FIELD",
    "FrameError",
    "apply_output",
    "build_common",
    "charge_answer",
    "check_items",
    "project",
    "step_input",
]

SOURCE_FIELD: Final = "_source"
"""The item field that names the recall step an item came from (written on every added item)."""

_EMPTY: Mapping[str, Any] = {}
_INDEXES: Final[list[Any]] = list(range(PIECE))
"""The ints 0 .. PIECE - 1, made once: compiled, a native int appended to a list is a new
int object past 256, one taken from here is shared (typed ``Any``: never unboxed)."""
_isfinite = math.isfinite
_NO_FIELDS: dict[str, Any] = {}
"""Every response item of a flow without item outputs (one dict, never written)."""


class FrameError(Exception):
    """Input could not be built or output could not be applied."""


def build_common(step: Step, common: dict[str, Any]) -> dict[str, Any]:
    """The operator's view of the common fields (strict, then defaulted, then nullable)."""
    view: dict[str, Any] = {}
    for f in step.common_strict:
        v = common.get(f)
        if v is None:
            raise FrameError(f'required field "{f}" is nil in common')
        view[f] = v
    for f, default in step.common_defaulted:
        v = common.get(f)
        view[f] = default if v is None else v
    for f in step.common_nullable:
        if f not in common:
            raise FrameError(f'required field "{f}" is missing in common')
        view[f] = common[f]
    return view


def step_input(step: Step, common: dict[str, Any], frame: Frame) -> OperatorInput:
    """What ``step``'s operator reads: its common view, the items checked, its templated params.

    Raises ``FrameError`` (or ``ValueError`` from a template) for input the
    operator may not get; both run loops (plain and observed) build every
    operator's input here.
    """
    view = build_common(step, common) if step.needs_common else _EMPTY
    if step.item_strict or step.item_nullable:
        check_items(step, frame)
    templated = resolve_templates(step.templated, common) if step.templated else _EMPTY
    return OperatorInput(view, templated=templated, item_defaults=step.item_defaults, frame=frame)


def check_items(step: Step, frame: Frame) -> None:
    """Strict item fields must be non-null, nullable ones present, on every item.

    The first error is the one the engines report going item by item: the
    lowest item index, and on it the strict fields first, in order.
    """
    first = frame.count
    for f in step.item_strict:
        bad = frame.first_unset(f)
        if 0 <= bad < first:
            first = bad
    for f in step.item_nullable:
        bad = frame.first_missing(f)
        if 0 <= bad < first:
            first = bad
    if first == frame.count:
        return
    for f in step.item_strict:
        if frame.value(first, f) is None:
            raise FrameError(f'required field "{f}" is nil on item[{first}]')
    for f in step.item_nullable:
        if frame.first_missing(f) == first:
            raise FrameError(f'required field "{f}" is missing on item[{first}]')


def _bad_float(v: Any) -> bool:
    return type(v) is float and not _isfinite(v)


def _first_bad(values: list[Any]) -> int:
    """Index of the first NaN/Inf float in ``values``, or -1.

    A plain loop: compiled, a type test and a native comparison per value
    (the float is unboxed once); past :data:`PIECE` values, piece by piece
    (a slice each).
    """
    n = len(values)
    if n > PIECE:
        for a, b in spans(n):
            bad = _first_bad(values[a:b])
            if bad >= 0:
                return a + bad
        return -1
    for i, v in enumerate(values):  # bounded: n <= PIECE values
        if type(v) is float:
            f: float = v
            if f - f != 0.0:  # inf - inf and nan - nan are nan; every finite f gives 0
                return i
    return -1


def _nan(field: str) -> str:
    return f'field "{field}": NaN/Inf is not a valid JSON value'


def apply_output(
    step: Step,
    out: OperatorOutput,
    common: dict[str, Any],
    frame: Frame,
    answer: AnswerBytes | None = None,
) -> None:
    """Apply ``out`` to the frame (``common`` and ``frame`` are changed in place).

    ``answer``: the run's answer bound, charged with what ``out`` adds before
    anything is applied (``AnswerTooLargeError`` past it). The writes are
    applied in the order the public engines apply them: common, item writes,
    column writes, removals, the order, added items; a bad write stops there.
    """
    if answer is not None and (out.common_writes or out.fills):
        charge_answer(step, out, answer)
    cw = out.common_writes
    if cw:
        for f, v in cw.items():
            if _bad_float(v):
                raise FrameError(f"common write: {_nan(f)}")
        common.update(cw)
    n = frame.count
    if out.item_writes:
        for i, f, v in out.item_writes:
            if i < 0 or i >= n:
                raise FrameError(f"SetItem index {i} out of range [0, {n})")
            if _bad_float(v):
                raise FrameError(f"item[{i}] write: {_nan(f)}")
            frame.set_value(i, f, v)
    if out.column_writes:
        checked = out.column_checked
        for k, (f, values) in enumerate(out.column_writes):
            if len(values) != n:
                raise FrameError(
                    f'SetItemColumn "{f}" length {len(values)} does not match item count {n}'
                )
            if checked is None or k >= len(checked) or not checked[k]:
                bad = _first_bad(values)
                if bad >= 0:
                    raise FrameError(f"item[{bad}] write: {_nan(f)}")
            frame.set_column(f, values)
    removal = out.removal
    if removal is not None and len(removal) > 0:
        _remove(frame, removal)
    order = out.item_order
    if order is not None:
        if not out.order_checked:
            order = _checked_order(order, frame.count)
        elif len(order) != frame.count:  # promised a permutation: only its length is checked
            raise FrameError(
                f"SetItemOrder length {len(order)} does not match item count {frame.count}"
            )
        frame.keep(order)
    if out.added_count:
        _add(step, out, frame)


def _add(step: Step, out: OperatorOutput, frame: Frame) -> None:
    """Append ``out``'s added items (checked for NaN and infinity unless promised), with the
    recall step's name in ``_source`` where they do not hold it already."""
    before = frame.count
    columns = out.added_columns
    rows = out.added_rows
    if columns is not None:
        if not out.finite_added:
            for f, col in columns.items():  # bounded: the added fields
                if _first_bad(col) >= 0:
                    raise FrameError(f"added item write: {_nan(f)}")
        frame.extend_columns(columns, out.added_count)
    elif rows is not None:
        if not out.finite_added:
            for row in rows:  # bounded: the added items times their fields
                for f, v in row.items():
                    if _bad_float(v):
                        raise FrameError(f"added item write: {_nan(f)}")
        frame.extend_rows(rows)
    if step.recall and out.added_source != step.name:
        frame.fill(SOURCE_FIELD, before, step.name)


def charge_answer(step: Step, out: OperatorOutput, answer: AnswerBytes) -> None:
    """Count ``out``'s common writes and fills against ``answer`` (see ``_answer``).

    Each written value is sized once: a fill counts its value times its item count.
    """
    added = 0
    if out.common_writes:
        for f, v in out.common_writes.items():  # bounded: the operator's common writes
            added += len(f) + 4 + value_bytes(v)
    if out.fills:
        for v, count in out.fills:  # bounded: the operator's fill_column calls
            added += (value_bytes(v) + 8) * count
    answer.charge(step.name, added)


def _remove(frame: Frame, removal: set[int] | range | list[int]) -> None:
    """Drop the items whose index is in ``removal`` (indices into the frame, not empty).

    A range ending at the last item is a truncation; otherwise compiled, the
    indices are unboxed once each: their range in one pass, a keep-mask in
    another (a set lookup per item would box every index).
    """
    n = frame.count
    lo, hi = _index_range(removal)
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise FrameError(f"RemoveItem index {bad} out of range [0, {n})")
    if hi == n - 1 and (
        (isinstance(removal, range) and removal.step in (1, -1))
        or (isinstance(removal, set) and hi - lo + 1 == len(removal))
    ):  # a tail: truncation
        frame.truncate(lo)
        return
    keep = [True] * n
    if isinstance(removal, set):
        for part in batches(removal) if len(removal) > PIECE else (removal,):
            for j in part:  # bounded: len(removal) indices, PIECE a piece
                keep[j] = False
    elif isinstance(removal, range):  # compiled: native ints, no int object an index
        j, step = removal.start, removal.step
        for _ in range(len(removal)):  # bounded: len(removal) indices
            keep[j] = False
            j += step
    else:
        m = len(removal)
        for a, b in spans(m) if m > PIECE else ((0, m),):
            for i in range(a, b):  # bounded: m indices, PIECE a piece
                keep[removal[i]] = False
    kept: list[Any] = []
    shared = _INDEXES
    made = len(shared)
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for i in range(a, b):  # bounded: n items
            if keep[i]:
                kept.append(shared[i] if i < made else i)
    frame.keep(kept)


def _index_range(indices: set[int] | range | list[int]) -> tuple[int, int]:
    """``(min(indices), max(indices))`` of non-empty indices, piece by piece past ``PIECE``."""
    if isinstance(indices, range):
        first, last = indices[0], indices[-1]
        return (first, last) if first <= last else (last, first)
    if isinstance(indices, list):
        lo = hi = indices[0]
        m = len(indices)
        for a, b in spans(m) if m > PIECE else ((0, m),):
            for i in range(a, b):  # bounded: m indices, PIECE a piece
                j = indices[i]
                if j < lo:
                    lo = j
                if j > hi:
                    hi = j
        return lo, hi
    lo = hi = next(iter(indices))
    for part in batches(indices) if len(indices) > PIECE else (indices,):
        for j in part:  # bounded: len(indices) indices, PIECE a piece
            if j < lo:
                lo = j
            if j > hi:
                hi = j
    return lo, hi


def _checked_order(order: list[int], n: int) -> list[int]:
    """``order`` when it is a permutation of ``range(n)``; else the FrameError naming why."""
    if len(order) != n:
        raise FrameError(f"SetItemOrder length {len(order)} does not match item count {n}")
    # One pass: a permutation of range(n) has n distinct in-range indices
    # (``seen`` marks the taken ones); the first that is not stops it.
    seen = [False] * n
    valid = True
    try:
        for a, b in spans(n) if n > PIECE else ((0, n),):
            for j in order[a:b] if n > PIECE else order:  # compiled: no index per value
                if j < 0 or j >= n or seen[j]:
                    valid = False
                    break
                seen[j] = True
            if not valid:
                break
    except TypeError:  # a non-integer index
        valid = False
    if not valid:
        _check_permutation(order, n)
        raise FrameError(f"SetItemOrder is not a permutation of [0, {n})")
    return order


def _check_permutation(order: list[int], n: int) -> None:
    """Raise the error naming the first bad index of ``order`` (range first, then repeats)."""
    for i in order:
        if not isinstance(i, int) or i < 0 or i >= n:
            raise FrameError(f"SetItemOrder index {i} out of range [0, {n})")
    seen: set[int] = set()
    for i in order:
        if i in seen:
            raise FrameError(f"SetItemOrder duplicate index {i} (order must be a permutation)")
        seen.add(i)


def project(
    common: Mapping[str, Any],
    frame: Frame,
    common_out: tuple[str, ...],
    item_out: tuple[str, ...],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The response's common and items: declared output fields only (absent fields left out).

    Without item outputs every response item is the one empty dict
    ``_NO_FIELDS``: a flow's result is read-only (``Result``), and n fresh
    empty dicts cost an allocation and a free each.
    """
    rc = {f: common[f] for f in common_out if f in common}
    n = frame.count
    if not item_out:
        return rc, [_NO_FIELDS] * n
    cols: list[tuple[str, list[Any]]] = []
    for f in item_out:  # bounded: the contract's item_output
        col = frame.present(f)
        if col is not None:
            cols.append((f, col))
    return rc, dict_rows(cols, 0, n)
