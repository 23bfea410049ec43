"""``build_feed_table``: a ``FeedTable`` from the row chunks a source fetched.

Each column's chunks are joined into one tuple, untracked from the cyclic
garbage collector as soon as it exists (see ``_feed_table`` for why tuples);
``float_columns`` become floats and bytes values base64 text
(``json_converter``); the values of each column are measured
(``values_nbytes``, unless the loader process measured them already), and
every index column is indexed (``build_index``).

Guarantees: a build runs on one thread (the refresh thread) and shares
nothing until it returns the table. It calls the given ``pause`` (a
:class:`~resources._pacing.Pacer`) between chunks and between the ``pieces``
of every later pass, so a load never holds the interpreter for long: the
only C-level passes over a whole column are joining its pieces into one
tuple and freeing it (a few milliseconds each for 200,000 values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

from ._feed_index import build_index
from ._feed_table import FeedTable
from ._json_values import json_converter
from ._pacing import Pause, no_pause, pieces
from ._untracking import untrack_atomic
from ._value_size import values_nbytes

__all__ = ["build_feed_table"]


def _joined(part: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """One column from its chunks, untracked by the garbage collector where it can be.

    Two C-level passes of about a millisecond per 100,000 values each.
    """
    column = tuple(chain.from_iterable(part))
    part.clear()
    untrack_atomic(column)
    return column


def _converted(
    column: Sequence[Any], convert: Callable[[Any], Any], pause: Pause
) -> tuple[Any, ...]:
    """``convert`` applied to every non-null value, piece by piece."""
    part: list[tuple[Any, ...]] = []
    for _, piece in pieces(column, pause):
        if None in piece:
            done = tuple([None if v is None else convert(v) for v in piece])
        else:
            done = tuple(map(convert, piece))
        untrack_atomic(done)
        part.append(done)
    return _joined(part)


def build_feed_table(
    names: Sequence[str],
    chunks: Iterable[Sequence[Sequence[Any]]],
    id_column: str,
    index_columns: Sequence[str],
    *,
    float_columns: Iterable[str] = (),
    columnar: bool = False,
    pause: Pause = no_pause,
    value_bytes: Sequence[int] | None = None,
    **info: Any,
) -> FeedTable:
    """Build a table from row chunks (each a sequence of row tuples in ``names`` order).

    With ``columnar`` each chunk is instead a sequence of columns (one list
    of values per name, all of one length), as the loader process sends them.
    ``float_columns`` (e.g. DECIMAL columns) are converted to ``float``. The
    caller checks that ``id_column`` and ``index_columns`` are among ``names``.
    ``pause`` is called between chunks and between pieces of every later pass.
    ``value_bytes``: per column, the bytes of its values as the loader process
    measured them, complete once ``chunks`` is exhausted; else (or if it does
    not have one entry per name) the build measures every value itself.

    >>> t = build_feed_table(["id", "cat"], [[(1, "a"), (2, "b"), (3, "a")]], "id", ["cat"])
    >>> t.index_keys("cat"), t.column("id")
    (['a', 'b'], (1, 2, 3))
    """
    parts: list[list[tuple[Any, ...]]] = [[] for _ in names]
    for chunk in chunks:
        pause()
        if chunk:
            chunk_columns = chunk if columnar else zip(*chunk, strict=True)
            for part, values in zip(parts, chunk_columns, strict=True):
                piece = values if type(values) is tuple else tuple(values)
                untrack_atomic(piece)  # else every collection until the join walks it
                part.append(piece)
    by_name: dict[str, tuple[Any, ...]] = {}
    for name, part in zip(names, parts, strict=True):
        pause()
        by_name[name] = _joined(part)
    for name in float_columns:
        by_name[name] = _converted(by_name[name], float, pause)
    for name, column in by_name.items():
        convert = json_converter(column)
        if convert is not None:
            by_name[name] = _converted(column, convert, pause)
    if value_bytes is None or len(value_bytes) != len(names):
        sizes = {name: _measured(column, pause) for name, column in by_name.items()}
    else:
        sizes = dict(zip(names, value_bytes, strict=True))
    indices = {name: build_index(by_name[name], pause) for name in index_columns}
    return FeedTable(by_name, id_column, indices, value_bytes=sizes, **info)


def _measured(column: Sequence[Any], pause: Pause) -> int:
    """``values_nbytes`` of the whole column, piece by piece."""
    return sum(values_nbytes(piece) for _, piece in pieces(column, pause))
