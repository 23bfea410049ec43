"""The request frame: building operator inputs from it and applying outputs to it.

A frame is a plain ``common`` dict and a list of item dicts, owned by one
request (copied from the request on entry). Errors raised here are
``FrameError``; the runner wraps them into ``ExecutionError`` naming the
operator, with the same texts as the public engines.

The per-item loops are written out plainly (``for row in rows``) because
mypyc compiles this module (``pineapple._native``) into C loops; past
:data:`PIECE` items they run piece by piece (``spans``), so that no loop
holds the GIL for more than one piece.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from ._answer import AnswerBytes, value_bytes
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
_ABSENT: Final = object()
"""What ``dict.get`` returns for a missing key where None is a value."""
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


def step_input(
    step: Step, common: dict[str, Any], items: list[dict[str, Any]], present: dict[str, int]
) -> OperatorInput:
    """What ``step``'s operator reads: its common view, the items checked, its templated params.

    Raises ``FrameError`` (or ``ValueError`` from a template) for input the
    operator may not get; both run loops (plain and observed) build every
    operator's input here.
    """
    view = build_common(step, common) if step.needs_common else _EMPTY
    if step.item_strict or step.item_nullable:
        check_items(step, items, present)
    templated = resolve_templates(step.templated, common) if step.templated else _EMPTY
    return OperatorInput(view, items, templated=templated, item_defaults=step.item_defaults)


def check_items(step: Step, items: list[dict[str, Any]], present: dict[str, int]) -> None:
    """Strict item fields must be non-null, nullable ones present, on every item.

    ``present`` maps a field to the length of the item-list prefix known to
    carry it (keys are never removed from a row, so presence only grows); it
    spares re-checking fields that earlier operators already verified.
    """
    n = len(items)
    ok = True
    for f in step.item_strict:
        if not _all_set(items, f, 0, n):
            ok = False
    for f in step.item_nullable:
        known = present.get(f, 0)
        if known >= n:
            continue
        if _all_contain(items, f, known, n):
            present[f] = n
        else:
            ok = False
    if ok:
        return
    for i, row in enumerate(items):  # item-major, for the first error as the engines report it
        for f in step.item_strict:
            if row.get(f) is None:
                raise FrameError(f'required field "{f}" is nil on item[{i}]')
        for f in step.item_nullable:
            if f not in row:
                raise FrameError(f'required field "{f}" is missing on item[{i}]')


def _all_set(rows: list[dict[str, Any]], field: str, start: int, end: int) -> bool:
    """Every row of ``rows[start:end]`` has ``field`` set (not None)."""
    if end - start > PIECE:
        return all(_all_set(rows, field, start + a, start + b) for a, b in spans(end - start))
    return all(rows[i].get(field) is not None for i in range(start, end))


def _all_contain(rows: list[dict[str, Any]], field: str, start: int, end: int) -> bool:
    """Every row of ``rows[start:end]`` has ``field`` (None allowed)."""
    if end - start > PIECE:
        return all(_all_contain(rows, field, start + a, start + b) for a, b in spans(end - start))
    return all(field in rows[i] for i in range(start, end))


def _set_column(rows: list[dict[str, Any]], field: str, values: list[Any]) -> None:
    """``rows[i][field] = values[i]`` for every row (the lengths are equal).

    Past :data:`PIECE` rows, piece by piece (slices share the rows). The loop
    walks both lists at once: compiled, no bounds-checked index per value (a
    positional ``zip`` is what mypyc compiles so; the lengths are checked).
    """
    n = len(rows)
    if n > PIECE:
        for a, b in spans(n):
            _set_column(rows[a:b], field, values[a:b])
        return
    for row, v in zip(rows, values):  # noqa: B905  (bounded: n <= PIECE rows)
        row[field] = v


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
    items: list[dict[str, Any]],
    present: dict[str, int],
    answer: AnswerBytes | None = None,
) -> list[dict[str, Any]]:
    """Apply ``out`` to the frame; returns the (possibly new) item list.

    ``present`` (see :func:`check_items`) is kept true for the returned list.
    ``answer``: the run's answer bound, charged with what ``out`` adds before
    anything is applied (``AnswerTooLargeError`` past it).
    """
    if answer is not None and (out.common_writes or out.fills):
        charge_answer(step, out, answer)
    cw = out.common_writes
    if cw:
        for f, v in cw.items():
            if _bad_float(v):
                raise FrameError(f"common write: {_nan(f)}")
        common.update(cw)
    n = len(items)
    if out.item_writes:
        for i, f, v in out.item_writes:
            if i < 0 or i >= n:
                raise FrameError(f"SetItem index {i} out of range [0, {n})")
            if _bad_float(v):
                raise FrameError(f"item[{i}] write: {_nan(f)}")
            items[i][f] = v
    if out.column_writes:
        for f, values in out.column_writes:
            if len(values) != n:
                raise FrameError(
                    f'SetItemColumn "{f}" length {len(values)} does not match item count {n}'
                )
            bad = _first_bad(values)
            if bad >= 0:
                raise FrameError(f"item[{bad}] write: {_nan(f)}")
            _set_column(items, f, values)
            present[f] = n
    if out.removed or out.item_order is not None:
        if out.removed:
            items = _remove(items, out.removed)
        if out.item_order is not None:
            items = _reorder(items, out.item_order)
        # Survivors of fully verified fields still carry them; others start over
        # (nothing to do when every field is verified on all rows and none left).
        m = len(items)
        if present and (m != n or min(present.values()) < n):
            kept = {f: m for f, known in present.items() if known >= n}
            present.clear()
            present.update(kept)
    added = out.added_items
    if added:
        if not out.finite_added:
            for row in added:
                for f, v in row.items():
                    if _bad_float(v):
                        raise FrameError(f"added item write: {_nan(f)}")
        if step.recall and out.added_source != step.name:
            name = step.name
            count = len(added)
            for a, b in spans(count) if count > PIECE else ((0, count),):
                for i in range(a, b):
                    added[i][SOURCE_FIELD] = name
        before = len(items)
        items.extend(added)
        after = len(items)
        for f in out.added_fields:
            if present.get(f, 0) >= before:
                present[f] = after
        if step.recall and present.get(SOURCE_FIELD, 0) >= before:
            present[SOURCE_FIELD] = after
    return items


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


def _remove(items: list[dict[str, Any]], removed: set[int]) -> list[dict[str, Any]]:
    """The items whose index is not in ``removed`` (a set of indices into ``items``).

    Compiled, the indices are unboxed once each: their range in one pass, a
    keep-mask in another (a set lookup per item would box every index).
    """
    n = len(items)
    lo, hi = _index_range(removed)
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise FrameError(f"RemoveItem index {bad} out of range [0, {n})")
    if hi == n - 1 and hi - lo + 1 == len(removed):  # a tail: truncation
        return items[:lo]
    keep = [True] * n
    for part in batches(removed) if len(removed) > PIECE else (removed,):
        for j in part:  # bounded: len(removed) indices, PIECE a piece
            keep[j] = False
    kept: list[dict[str, Any]] = []
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for i in range(a, b):
            if keep[i]:
                kept.append(items[i])
    return kept


def _index_range(indices: set[int]) -> tuple[int, int]:
    """``(min(indices), max(indices))`` of a non-empty set, piece by piece past ``PIECE``."""
    lo = hi = next(iter(indices))
    for part in batches(indices) if len(indices) > PIECE else (indices,):
        for j in part:  # bounded: len(indices) indices, PIECE a piece
            if j < lo:
                lo = j
            if j > hi:
                hi = j
    return lo, hi


def _reorder(items: list[dict[str, Any]], order: list[int]) -> list[dict[str, Any]]:
    n = len(items)
    if len(order) != n:
        raise FrameError(f"SetItemOrder length {len(order)} does not match item count {n}")
    if n == 0:
        return items
    # One pass: a permutation of range(n) has n distinct in-range indices
    # (``seen`` marks the taken ones); the first that is not stops it.
    reordered: list[dict[str, Any]] = []
    seen = [False] * n
    valid = True
    try:
        for a, b in spans(n) if n > PIECE else ((0, n),):
            for j in order[a:b] if n > PIECE else order:  # compiled: no index per value
                if j < 0 or j >= n or seen[j]:
                    valid = False
                    break
                seen[j] = True
                reordered.append(items[j])
            if not valid:
                break
    except TypeError:  # a non-integer index
        valid = False
    if not valid:
        _check_permutation(order, n)
        raise FrameError(f"SetItemOrder is not a permutation of [0, {n})")
    return reordered


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
    items: list[dict[str, Any]],
    common_out: tuple[str, ...],
    item_out: tuple[str, ...],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The response's common and items: declared output fields only (absent fields left out).

    Without item outputs every response item is the one empty dict
    ``_NO_FIELDS``: a flow's result is read-only (``Result``), and n fresh
    empty dicts cost an allocation and a free each (a tenth of a
    1,000-item run's instructions).
    """
    rc = {f: common[f] for f in common_out if f in common}
    n = len(items)
    if not item_out:
        return rc, [_NO_FIELDS] * n
    rows: list[dict[str, Any]] = []
    for a, b in spans(n) if n > PIECE else ((0, n),):
        for row in items[a:b] if n > PIECE else items:  # compiled: no index per row
            rows.append(_projected(row, item_out))
    return rc, rows


def _projected(row: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The ``fields`` that ``row`` has, in that order (one lookup each)."""
    out: dict[str, Any] = {}
    for f in fields:  # bounded: the contract's item_output
        v = row.get(f, _ABSENT)
        if v is not _ABSENT:
            out[f] = v
    return out
