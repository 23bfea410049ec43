"""``build_index``: a column's exact-match bitmap index; ``lookup_keys``: how a request finds a key.

An index maps every distinct value of a column to a ``FrozenBitMap`` of the
row numbers holding it; a list-valued cell (a JSON array text such as
``"[3, 7]"``, a comma list such as ``"3,7"``, or a list) is indexed under
each of its elements. Recall intersects bitmaps; it never scans the table.
A request value is looked up under each of its :func:`lookup_keys`, so ``3``
and ``"3"`` match each other.

Guarantees: an index is built on the load's thread and only read after that;
its bitmaps are frozen, so readers on any number of threads share it without
locks. Building walks the column in ``pieces`` and calls the given ``pause``
between them (and every 1,024 keys while freezing the bitmaps).
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from pyroaring import FrozenBitMap

from ._pacing import Pause, no_pause, pieces

__all__ = ["Index", "build_index", "list_elements", "lists_in", "lookup_keys"]

Index = dict[Any, FrozenBitMap]


def _number_or_text(part: str) -> Any:
    return int(part) if part.lstrip("-").isdigit() else part


def _elements(cell: Any) -> Sequence[Any]:
    """The values a list-valued cell is indexed under (none for NULL and ``[]``)."""
    if type(cell) is str:
        text = cell.strip()
        if text[:1] == "[":
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                return (cell,)
            if isinstance(parsed, list):
                return [e for e in parsed if e is not None and not isinstance(e, list | dict)]
            return (cell,)
        if "," in text:
            # "3,7" lists ids as a JSON array [3, 7] would: integers stay integers.
            return [_number_or_text(p) for p in map(str.strip, text.split(",")) if p]
        return (cell,)
    if isinstance(cell, list | tuple):  # nested lists (2-D arrays) hold no index key
        return [e for e in cell if e is not None and not isinstance(e, list | tuple | dict)]
    return () if cell is None else (cell,)


def list_elements(cell: Any) -> Sequence[Any]:
    """The keys a cell of a list-valued column is indexed under (a JSON-array text's
    elements other than null and nested lists or objects, else :func:`_elements`)."""
    if type(cell) is str and cell[:1] == "[":
        try:
            parsed = orjson.loads(cell)
        except orjson.JSONDecodeError:
            parsed = None
        if type(parsed) is list:
            return [e for e in parsed if e is not None and type(e) not in (list, dict)]
    return _elements(cell)


def lists_in(distinct: Iterable[Any]) -> bool:
    """Whether a column whose distinct values are ``distinct`` is list-valued (a text with a
    comma or starting with ``[``)."""
    return any(type(v) is str and ("," in v or v[:1] == "[") for v in distinct)


def _is_list_valued(values: Sequence[Any], pause: Pause = no_pause) -> bool:
    kinds: set[type] = set()
    for _, piece in pieces(values, pause):
        kinds.update(map(type, piece))
    if list in kinds or tuple in kinds:
        return True
    if str not in kinds:
        return False
    # Index columns repeat values: look at each distinct text once (hashing is C-level).
    distinct: set[Any] = set()
    try:
        for _, piece in pieces(values, pause):
            distinct.update(piece)
    except TypeError:  # an unhashable cell (dict): no list cell was seen above
        distinct = set(v for v in values if type(v) is str)
    return lists_in(distinct)


def build_index(values: Sequence[Any], pause: Pause = no_pause) -> Index:
    """The index of one column: each distinct value (or list element) -> its row numbers."""
    # Row numbers as arrays, not lists: the garbage collector never walks an
    # array's items, and pyroaring builds a bitmap from one in a single C call.
    groups: defaultdict[Any, array[int]] = defaultdict(lambda: array("I"))
    if _is_list_valued(values, pause):
        for start, piece in pieces(values, pause):
            for row, cell in enumerate(piece, start):
                for element in list_elements(cell):
                    groups[element].append(row)
    else:
        for start, piece in pieces(values, pause):
            for row, cell in enumerate(piece, start):
                groups[cell].append(row)
        groups.pop(None, None)
    # A row listed twice under one element ("3,3") is deduplicated by the bitmap.
    index: Index = {}
    for n, (key, rows) in enumerate(groups.items()):
        if not n % 1024:
            pause()
        index[key] = FrozenBitMap(rows)
    return index


def lookup_keys(value: Any) -> tuple[Any, ...]:
    """The index keys a request value may be stored under (``3`` vs ``"3"``)."""
    if isinstance(value, bool):
        return (int(value),)
    if isinstance(value, int):
        return (value, str(value))
    if isinstance(value, float) and value.is_integer():
        return (value, str(int(value)))
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return (value, int(text))
    return (value,)
