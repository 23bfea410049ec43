"""``feed_data`` delta reads: the rows changed since the table held, upserted into a copy of it.

With ``delta_query`` (and ``loader: "arrow"``), a refresh whose version
query answers a new version reads only the rows changed since the table it
holds: ``delta_query`` with ``%(since)s`` replaced by the largest value of
``delta_column`` in that table (as a SQL literal). The loader child maps the
held table's snapshot file, reads the delta with connectorx, and upserts its
rows by ``id_column``: a row whose id the table has replaces that row in
place, a new id is appended (in the delta's order). Ranks and indices are
then built over the merged columns exactly as for a full read, and the
snapshot is written the same way, so what is served after a delta is the
table a full read gives (same rows, same positions when new ids come last,
as with a table read in primary-key order).

Deletes: a delta read cannot see a row that is gone. The fetcher reads the
whole table after ``delta_full_every`` delta reads in a row (and whenever it
holds no table, the held table has no ``delta_column`` value, or a delta read
failed): a deleted row is served until then. A soft delete (a status column)
is an update and reaches the pods with the next delta.

A delta whose columns differ from the table's (names, or a type that cannot
be the column's) fails with :class:`SourceError` naming the column; the
fetcher's next read is then full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pymysql.converters import escape_item
from pyroaring import FrozenBitMap

from ._errors import SourceError
from ._mapped_table import index_path_of, read_indices, snapshot_columns, snapshot_info

__all__ = ["SINCE", "Columns", "Merged", "delta_sql", "merge_delta"]

SINCE = "%(since)s"
"""The placeholder of ``delta_query`` that the held table's largest ``delta_column`` fills."""

Columns: TypeAlias = "list[tuple[str, pa.Array[Any], str]]"


def delta_sql(query: str, since: Any) -> str:
    """``query`` with :data:`SINCE` replaced by ``since`` as a MySQL literal (escaped)."""
    if isinstance(since, bool) or not isinstance(since, int | float | str):
        raise SourceError(f"delta_column's largest value {since!r} is not a number or text")
    return query.replace(SINCE, escape_item(since, "utf8mb4"))


def _matched(name: str, base: pa.Array[Any], delta: pa.Array[Any]) -> pa.Array[Any]:
    """``delta`` as an array of ``base``'s type, or SourceError naming the column."""
    if delta.type == base.type:
        return delta
    if delta.null_count == len(delta):  # an all-NULL delta column has no type of its own
        nulls: pa.Array[Any] = pa.nulls(len(delta), base.type)
        return nulls
    raise SourceError(
        f"delta_query: column {name!r} reads as {delta.type}, the table holds {base.type}"
        " (the next read is full)"
    )


class Merged(NamedTuple):
    """A delta upserted into a snapshot's table (:func:`merge_delta`)."""

    columns: Columns
    """``(name, array, encoding)`` per column, in the table's order."""
    changed: frozenset[str]
    """The columns whose values differ from the table's (their ranks and index are built
    anew; the others' are the table's own)."""
    ranks: dict[tuple[str, bool], pa.Array[Any]]
    """The table's ranks by ``(column, descending)``."""
    null_ranks: dict[str, int]
    """The table's NULL rank per ranked column."""
    indices: dict[str, list[tuple[Any, FrozenBitMap]]]
    """The table's bitmap index per index column."""


def merge_delta(base_path: Path, delta: Columns, id_column: str) -> Merged:
    """The columns of the snapshot at ``base_path`` with ``delta``'s rows upserted by
    ``id_column`` (see the module), and what of the table stays valid.

    A row the delta replaces is replaced in place (``replace_with_mask``), a new
    id appended; a column whose replaced cells all equal the table's and with no
    new row is the table's own array (read in place, not copied).
    """
    # An unchanged column is returned as the mapped array itself: Arrow's buffers keep
    # their region of the map alive after the file object closes.
    with pa.memory_map(str(base_path), "r") as source:
        batch = ipc.open_file(source).get_batch(0)
        base, ranks = snapshot_columns(batch)
        info = snapshot_info(batch)
        given = {name: arr for name, arr, _ in delta}
        if sorted(given) != sorted(name for name, _, _ in base):
            raise SourceError(
                f"delta_query returns columns {sorted(given)}, the table has"
                f" {sorted(name for name, _, _ in base)} (the next read is full)"
            )
        by_name = {name: arr for name, arr, _ in base}
        ids = _matched(id_column, by_name[id_column], given[id_column])
        if ids.null_count or pc.count_distinct(ids).as_py() != len(ids):
            raise SourceError(
                f"delta_query: column {id_column!r} (id_column) repeats an id or holds NULL"
            )
        # Hashes the delta's ids only: the table's are probed against them.
        hit: Any = pc.is_in(by_name[id_column], value_set=ids)
        positions: Any = pc.indices_nonzero(hit)
        replaced: Any = by_name[id_column].take(positions)
        rows: Any = pc.index_in(replaced, value_set=ids)  # the delta row of each position
        fresh: Any = pc.invert(pc.is_in(ids, value_set=replaced))
        appended = int(pc.sum(fresh).as_py() or 0)
        merged: Columns = []
        changed: set[str] = set()
        for name, arr, encoding in base:  # bounded: the table's columns
            cells = _matched(name, arr, given[name])
            out = arr
            if len(positions):
                update = cells.take(rows)
                if not update.equals(arr.take(positions)):
                    out = pc.replace_with_mask(arr, hit, update)
                    changed.add(name)
            if appended:
                out = pa.concat_arrays([out, cells.filter(fresh)])
                changed.add(name)
            merged.append((name, out, encoding))
    return Merged(
        merged,
        frozenset(changed),
        ranks,
        dict(info.get("null_ranks") or {}),
        {c: list(keys.items()) for c, keys in read_indices(index_path_of(base_path)).items()},
    )
