"""The column frame (``pineapple.engine._columns``) against a list of dicts doing the same.

A seeded walk of random changes (values written, columns set and filled,
items appended as columns and as dicts of different shapes, kept, reordered,
truncated, sliced) is applied to a :class:`Frame` and to plain row dicts; after
every change the frame's row view, each column, each item's value and the
first missing or unset index must be what the rows say. Lists handed to the
frame (``set_column``, ``extend_columns``) must never change.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pineapple.engine._columns import ABSENT, Frame
from pineapple.engine._pieces import PIECE

SEED = 20261205
WALKS = 300
STEPS = 40
"""Changes of a walk: each one is followed by a random part of the checks (all at the end)."""
FIELDS = ["a", "b", "c", "d"]
VALUES: list[Any] = [None, 0, 1.5, "x", "", False, [1], {"k": None}]

Rows = list[dict[str, Any]]


def _check(frame: Frame, rows: Rows, rng: random.Random | None = None) -> None:
    """The frame says what ``rows`` say; with ``rng``, a random part of it in a random order
    (so that columns of earlier selections are read one by one, not all at once)."""
    assert frame.count == len(rows)
    fields = [*FIELDS, "never"]
    reads = [(f, k) for f in fields for k in range(5)]
    if rng is not None:
        reads = rng.sample(reads, rng.randint(0, len(reads)))
    if rng is None or rng.random() < 0.3:
        assert frame.rows() == rows
    for f, k in reads:
        if k == 0:
            assert frame.column(f) == [row.get(f) for row in rows], f
        elif k == 1:
            assert frame.column(f, "dflt") == [
                "dflt" if row.get(f) is None else row[f] for row in rows
            ], f
        elif k == 2:
            missing = [i for i, row in enumerate(rows) if f not in row]
            assert frame.first_missing(f) == (missing[0] if missing else -1), f
        elif k == 3:
            unset = [i for i, row in enumerate(rows) if row.get(f) is None]
            assert frame.first_unset(f) == (unset[0] if unset else -1), f
        else:
            for i in (0, len(rows) - 1, len(rows)):
                assert frame.value(i, f) == (rows[i].get(f) if 0 <= i < len(rows) else None)
    if rng is None:
        assert frame.rows() == rows
        for f in frame.columns:
            col = frame.present(f)
            assert col is not None and len(col) == frame.count
        assert all(ABSENT not in row.values() for row in frame.rows())


def _row(rng: random.Random) -> dict[str, Any]:
    return {f: rng.choice(VALUES) for f in FIELDS if rng.random() < 0.7}


def _step(
    rng: random.Random, frame: Frame, rows: Rows, handed: list[tuple[list[Any], list[Any]]]
) -> Rows:
    """One random change to both; returns the rows after it."""
    n = len(rows)
    f = rng.choice(FIELDS)
    kind = rng.randrange(8)
    if kind == 0 and n:
        i, v = rng.randrange(n), rng.choice(VALUES)
        frame.set_value(i, f, v)
        rows[i][f] = v
    elif kind == 1:
        values = [rng.choice(VALUES) for _ in range(n)]
        handed.append((values, list(values)))
        frame.set_column(f, values)
        for row, v in zip(rows, values, strict=True):
            row[f] = v
    elif kind == 2:
        start, v = rng.randint(0, n), rng.choice(VALUES)
        frame.fill(f, start, v)
        for row in rows[start:]:
            row[f] = v
    elif kind == 3:
        m = rng.randint(0, 3)
        fields = rng.sample(FIELDS, rng.randint(0, 3))
        cols = {g: [rng.choice(VALUES) for _ in range(m)] for g in fields}
        handed.extend((col, list(col)) for col in cols.values())
        frame.extend_columns(cols, m)
        rows.extend({g: cols[g][i] for g in fields} for i in range(m))
    elif kind == 4:
        added = [_row(rng) for _ in range(rng.randint(0, 3))]
        frame.extend_rows(copy.deepcopy(added))
        rows.extend(added)
    elif kind == 5:
        index = sorted(rng.sample(range(n), rng.randint(0, n)))
        rng.shuffle(index)
        frame.keep(index)
        rows = [rows[i] for i in index]
    elif kind == 6:
        k = rng.randint(0, n)
        frame.truncate(k)
        rows = rows[:k]
    else:
        a = rng.randint(0, n)
        b = rng.randint(a, n)
        part = frame.slice(a, b)
        _check(part, [dict(row) for row in rows[a:b]])
    return rows


def test_a_frame_changes_as_its_rows_would() -> None:
    rng = random.Random(SEED)
    for _walk in range(WALKS):
        start = [_row(rng) for _ in range(rng.randint(0, 5))]
        frame = Frame.of_rows(copy.deepcopy(start))
        rows = start
        handed: list[tuple[list[Any], list[Any]]] = []
        _check(frame, rows)
        for _ in range(STEPS):
            rows = _step(rng, frame, rows, handed)
            _check(frame, rows, rng)
        _check(frame, rows)
        for given, was in handed:
            assert given == was  # the frame never changed a list it was handed


def test_the_row_view_is_built_once_per_change() -> None:
    frame = Frame.of_rows([{"a": 1}, {"b": 2}])
    view = frame.rows()
    assert frame.rows() is view
    frame.set_value(0, "a", 3)
    assert frame.rows() is not view and frame.rows() == [{"a": 3}, {"b": 2}]


def test_rows_given_to_an_input_are_its_row_view_until_a_change() -> None:
    rows: Rows = [{"id": 1}, {"id": 2, "x": None}]
    frame = Frame.of_rows(rows, keep_view=True)
    assert frame.rows() is rows
    assert frame.first_missing("x") == 0 and frame.column("x") == [None, None]


@pytest.mark.parametrize("n", [PIECE - 1, PIECE + 3, 2 * PIECE + 1])
def test_large_frames_are_worked_piece_by_piece_alike(n: int) -> None:
    rows: Rows = [{"id": i, "v": float(i)} if i % 7 else {"id": i} for i in range(n)]
    frame = Frame.of_rows([dict(row) for row in rows])
    assert frame.column("v") == [row.get("v") for row in rows]
    assert frame.first_missing("v") == 0 and frame.first_missing("id") == -1
    keep = list(range(n - 1, -1, -2))
    frame.keep(keep)
    rows = [rows[i] for i in keep]
    assert frame.rows() == rows
    frame.fill("s", 1, "z")
    assert frame.column("s") == [None] + ["z"] * (len(rows) - 1)


def test_a_column_view_is_the_frames_own_list_only_where_it_needs_no_change() -> None:
    same = Frame.of_rows([{"id": "a"}, {"id": "b"}])
    assert same.column_view("id") is same.present("id")
    frame = Frame.of_rows([{"id": "a", "n": 1}, {"id": "b"}])
    assert frame.first_missing("id") == -1  # known now: on every item
    assert frame.column_view("id") is frame.present("id")
    assert frame.column_view("n") == frame.column("n") == [1, None]
    assert frame.column_view("n") is not frame.present("n")  # holds ABSENT: a fresh list
    assert frame.column_view("id", default="z") == ["a", "b"]
    assert frame.column_view("nope", default=0) == [0, 0]
    frame.keep([1, 0])
    assert frame.column_view("id") == ["b", "a"]
