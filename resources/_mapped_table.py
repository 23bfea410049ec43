"""A ``FeedTable`` as an immutable Arrow IPC file pair, and the table that maps it.

One snapshot is two files written once (by the loader) and never changed:

- ``<stem>.table.arrow``: an Arrow IPC *file* of one record batch holding
  every column, plus the prepared sort ranks as ``int64`` columns named
  ``__rank__:<column>:asc|desc``;
- ``<stem>.index.arrow``: the bitmap indices, one row per (column, key):
  the key as JSON bytes (``3`` and ``"3"`` stay apart) and the
  ``FrozenBitMap`` serialized in the portable roaring format.

:func:`open_mapped_table` maps both read-only (``pyarrow.memory_map``): the
columns and ranks are read in place (zero copy: every process mapping the
file shares the kernel's one copy of its pages); only the indices are
deserialized into this process (a few bytes per row; ``benchmarks/shared_table``
measures that against rebuilding them from the mapped columns).

Column encodings (``pineapple.encoding`` in the field metadata): ``int64``,
``float64``, ``string`` and ``bool`` for columns of one Python type (nulls
allowed); ``json`` (each cell as JSON bytes) for anything else, such as a
column mixing integers and text (SQLite allows it), so a value always comes
back with the type it had.

Guarantees:
- A mapped table is immutable: readers on any number of threads share it
  without locks, exactly like an in-heap ``FeedTable`` (it is a subclass, so
  ``recall_feed_data`` and the printer work unchanged).
- ``close()`` is called once no reader holds the table (the Manager's closer
  thread after the last release); it releases every view into the mapping
  and closes the map. The file may already be unlinked (a newer snapshot was
  published): the kernel frees its pages after the last process unmapped it.
- Files are written under a temporary name and renamed into place, so a
  reader never opens a half-written snapshot; a failed write (``ENOSPC``)
  unlinks its temporary files and raises :class:`SnapshotWriteError`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyroaring import AbstractBitMap, FrozenBitMap

from pineapple.resource.lowlevel import SnapshotFormatError, SnapshotWriteError

from ._feed_index import Index
from ._feed_table import FeedTable

__all__ = [
    "MappedFeedTable",
    "SnapshotFormatError",
    "SnapshotWriteError",
    "copy_feed_snapshot",
    "index_path_of",
    "open_mapped_table",
    "rank_field",
    "read_indices",
    "release_arrow_pool",
    "snapshot_columns",
    "snapshot_info",
    "write_arrow_snapshot",
    "write_feed_snapshot",
]

_ENCODING = b"pineapple.encoding"
_RANK = "__rank__"
TABLE_SUFFIX = ".table.arrow"
INDEX_SUFFIX = ".index.arrow"


# -- writing -----------------------------------------------------------------------------


def _encoding(values: Sequence[Any]) -> str:
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds == {int}:
        return "int64"
    if kinds == {float}:
        return "float64"
    if kinds == {str} or not kinds:
        return "string"
    if kinds == {bool}:
        return "bool"
    return "json"


def _json_cell(value: Any) -> bytes | None:
    return None if value is None else orjson.dumps(value)


def _arrow_column(values: Sequence[Any]) -> tuple[pa.Array[Any], str]:
    encoding = _encoding(values)
    if encoding == "int64":
        try:
            return pa.array(values, type=pa.int64()), encoding
        except (OverflowError, pa.ArrowInvalid):  # an integer beyond 64 bits
            encoding = "json"
    if encoding == "json":
        return pa.array([_json_cell(v) for v in values], type=pa.large_binary()), encoding
    kind = {"float64": pa.float64(), "string": pa.large_string(), "bool": pa.bool_()}[encoding]
    return pa.array(values, type=kind), encoding


def rank_field(column: str, descending: bool) -> str:
    """The name of the int64 column holding ``column``'s sort ranks one way."""
    return f"{_RANK}:{column}:{'desc' if descending else 'asc'}"


def _table_batch(
    columns: Sequence[tuple[str, pa.Array[Any], str]],
    ranks: Mapping[tuple[str, bool], pa.Array[Any]],
    info: Mapping[str, Any],
) -> pa.RecordBatch:
    fields: list[pa.Field[Any]] = []
    arrays: list[pa.Array[Any]] = []
    for name, array_, encoding in columns:
        fields.append(pa.field(name, array_.type, metadata={_ENCODING: encoding.encode()}))
        arrays.append(array_)
    for (column, descending), rank in ranks.items():
        fields.append(pa.field(rank_field(column, descending), pa.int64(), nullable=False))
        arrays.append(rank)
    schema = pa.schema(fields, metadata={b"pineapple": orjson.dumps(info, default=str)})
    return pa.record_batch(arrays, schema=schema)


def _index_batch(
    indices: Iterable[tuple[str, Iterable[tuple[Any, FrozenBitMap]]]],
) -> pa.RecordBatch:
    columns: list[str] = []
    keys: list[bytes] = []
    bitmaps: list[bytes] = []
    for column, items in indices:
        for key, bitmap in items:
            columns.append(column)
            keys.append(orjson.dumps(key))
            bitmaps.append(bitmap.serialize())
    return pa.record_batch(
        [
            pa.array(columns, type=pa.string()),
            pa.array(keys, type=pa.binary()),
            pa.array(bitmaps, type=pa.large_binary()),
        ],
        names=["column", "key", "bitmap"],
    )


def _write_file(path: Path, batch: pa.RecordBatch) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        os.rename(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_arrow_snapshot(
    stem: Path,
    columns: Sequence[tuple[str, pa.Array[Any], str]],
    ranks: Mapping[tuple[str, bool], pa.Array[Any]],
    indices: Iterable[tuple[str, Iterable[tuple[Any, FrozenBitMap]]]],
    info: Mapping[str, Any],
) -> tuple[Path, Path]:
    """The one writer of a snapshot: ``(name, array, encoding)`` per column, the int64 ranks
    by ``(column, descending)``, ``(column, [(key, bitmap), ...])`` per index column, and the
    table's ``info`` (``id_column``, ``version``, ``source``, ``load_seconds``, ``rows``,
    ``index_columns``, ``null_ranks``); the two paths.

    Raises :class:`SnapshotWriteError` naming the path when the directory is
    full or unwritable; no file is left behind then.
    """
    table_path = stem.with_name(stem.name + TABLE_SUFFIX)
    index_path = stem.with_name(stem.name + INDEX_SUFFIX)
    try:
        batch = _table_batch(columns, ranks, info)
        _write_file(index_path, _index_batch(indices))
        _write_file(table_path, batch)
    except (OSError, pa.ArrowException) as exc:
        index_path.unlink(missing_ok=True)
        table_path.unlink(missing_ok=True)
        raise SnapshotWriteError(f"cannot write snapshot {table_path}: {exc}") from exc
    return table_path, index_path


def write_feed_snapshot(table: FeedTable, stem: Path) -> tuple[Path, Path]:
    """Write ``table`` as ``<stem>.table.arrow`` and ``<stem>.index.arrow``; the two paths.

    Raises :class:`SnapshotWriteError` naming the path when the directory is
    full or unwritable; no file is left behind then.
    """
    try:
        columns = [(name, *_arrow_column(table.column(name))) for name in table.columns]
        ranks = {key: pa.array(r, type=pa.int64()) for key, r in table.prepared_ranks().items()}
    except (OSError, pa.ArrowException) as exc:
        raise SnapshotWriteError(f"cannot write snapshot {stem}: {exc}") from exc
    info = {
        "id_column": table.id_column,
        "version": table.version,
        "source": table.source,
        "load_seconds": table.load_seconds,
        "rows": len(table),
        "index_columns": list(table.index_columns),
        "null_ranks": table.null_ranks(),
    }
    indices = [(column, table.index_items(column)) for column in table.index_columns]
    return write_arrow_snapshot(stem, columns, ranks, indices, info)


def copy_feed_snapshot(table: MappedFeedTable, stem: Path) -> tuple[Path, Path] | None:
    """The files ``table`` was mapped from, copied to ``stem`` as :func:`write_feed_snapshot`
    names them; None when they are gone (the caller writes the table anew).

    A mapped table passed on as it is (a fleet pod's supervisor publishing a
    downloaded generation to its workers, a rollback to a kept value) costs a
    file copy, not an encoding of every column and index again. The files are
    immutable once written (a new generation gets new names), so the copy is
    the snapshot the table was opened from. Raises :class:`SnapshotWriteError`
    naming the path when the copy cannot be written; nothing is left behind.
    """
    source = table.path.with_name(table.path.name.removesuffix(TABLE_SUFFIX))
    pairs = [
        (source.with_name(source.name + suffix), stem.with_name(stem.name + suffix))
        for suffix in (TABLE_SUFFIX, INDEX_SUFFIX)
    ]
    try:
        for src, dst in pairs:  # bounded: two files
            _link_or_copy(src, dst)
    except FileNotFoundError:  # unlinked since it was opened: written anew
        for _, dst in pairs:
            dst.unlink(missing_ok=True)
        return None
    except OSError as exc:
        for _, dst in pairs:
            dst.unlink(missing_ok=True)
        raise SnapshotWriteError(f"cannot write snapshot {pairs[0][1]}: {exc}") from exc
    return pairs[0][1], pairs[1][1]


def _link_or_copy(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (snapshot files are never changed once written),
    or a copy where a link cannot be made (another file system)."""
    try:
        os.link(src, dst)
    except FileNotFoundError:
        raise
    except OSError:
        shutil.copyfile(src, dst)


def release_arrow_pool() -> None:
    """Hand the buffers Arrow's default pool keeps for reuse back to the OS.

    After a table was written and dropped, the pool holds its freed pages, so
    a publisher's RSS would stay at its peak between refreshes.
    """
    pa.default_memory_pool().release_unused()


# -- reading -----------------------------------------------------------------------------


def _view(buf: pa.Buffer | None) -> memoryview:
    """A zero-copy view of an Arrow buffer (empty for a missing one)."""
    return memoryview(b"") if buf is None else memoryview(buf)


def _validity(arr: pa.Array[Any]) -> memoryview | None:
    if arr.null_count == 0:
        return None
    buf = arr.buffers()[0]
    return None if buf is None else _view(buf)


class _Column(Sequence[Any]):
    """One mapped column read in place: ``column[row]`` without copying the column.

    Bounded: each access reads one cell; a slice reads only its rows.
    """

    def __init__(self, arr: pa.Array[Any]) -> None:
        self._arr = arr
        self._len = len(arr)
        self._offset = arr.offset
        self._valid = _validity(arr)

    def __len__(self) -> int:
        return self._len

    @property
    def arrow(self) -> pa.Array[Any]:
        """The mapped Arrow array itself (read in place)."""
        return self._arr

    def _null(self, row: int) -> bool:
        valid = self._valid
        if valid is None:
            return False
        bit = row + self._offset
        return not (valid[bit >> 3] >> (bit & 7)) & 1

    @overload
    def __getitem__(self, row: int) -> Any: ...

    @overload
    def __getitem__(self, row: slice) -> list[Any]: ...

    def __getitem__(self, row: int | slice) -> Any:
        if isinstance(row, slice):
            return self.take(range(*row.indices(self._len)))
        if row < 0:
            row += self._len
        if not 0 <= row < self._len:
            raise IndexError("column index out of range")
        return None if self._null(row) else self.cell(row)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.take(range(self._len)))

    def cell(self, row: int) -> Any:
        """The value of an in-range, non-null row."""
        return self._arr[row].as_py()

    def take(self, rows: Iterable[int]) -> list[Any]:
        """The values of ``rows`` (in range), in one C-level pass."""
        return self._arr.take(pa.array(list(rows), type=pa.int64())).to_pylist()

    def release(self) -> None:
        """Drop every view into the mapping (the column is unusable after)."""
        if self._valid is not None:
            self._valid.release()
            self._valid = None
        self._len = 0


class _FixedColumn(_Column):
    """``int64`` / ``float64``: the value buffer viewed as a ``memoryview`` of 8-byte cells."""

    def __init__(self, arr: pa.Array[Any], code: str) -> None:
        super().__init__(arr)
        raw = _view(arr.buffers()[1]).cast(code)  # type: ignore[call-overload]
        self._raw: memoryview | None = raw
        # Zero copy: a slice of a memoryview is a view. ``view[row]`` is as fast as a tuple's.
        self.view: memoryview = raw[arr.offset : arr.offset + len(arr)]

    def cell(self, row: int) -> Any:
        return self.view[row]

    def take(self, rows: Iterable[int]) -> list[Any]:
        if self._valid is None:
            view = self.view
            return [view[r] for r in rows]
        get = self.__getitem__
        return [get(r) for r in rows]

    def release(self) -> None:
        self.view.release()
        if self._raw is not None:
            self._raw.release()
            self._raw = None
        super().release()


class _StringColumn(_Column):
    """``large_string``: int64 offsets and UTF-8 bytes, both viewed in place."""

    def __init__(self, arr: pa.Array[Any]) -> None:
        super().__init__(arr)
        buffers = arr.buffers()
        self._offsets: memoryview | None = _view(buffers[1]).cast("q")
        self._bytes: memoryview | None = _view(buffers[2])

    def cell(self, row: int) -> Any:
        offsets, data = self._offsets, self._bytes
        assert offsets is not None and data is not None
        row += self._offset
        return str(data[offsets[row] : offsets[row + 1]], "utf-8")

    def take(self, rows: Iterable[int]) -> list[Any]:
        if self._valid is not None or self._offset:
            get = self.__getitem__
            return [get(r) for r in rows]
        offsets, data = self._offsets, self._bytes
        assert offsets is not None and data is not None
        return [str(data[offsets[r] : offsets[r + 1]], "utf-8") for r in rows]

    def release(self) -> None:
        for view in (self._offsets, self._bytes):
            if view is not None:
                view.release()
        self._offsets = self._bytes = None
        super().release()


class _JSONColumn(_Column):
    """Cells of mixed types, each kept as JSON bytes and decoded on read."""

    def cell(self, row: int) -> Any:
        return orjson.loads(self._arr[row].as_py())

    def take(self, rows: Iterable[int]) -> list[Any]:
        return [None if v is None else orjson.loads(v) for v in super().take(rows)]


def _column(arr: pa.Array[Any], encoding: str) -> _Column:
    if encoding == "int64":
        return _FixedColumn(arr, "q")
    if encoding == "float64":
        return _FixedColumn(arr, "d")
    if encoding == "string":
        return _StringColumn(arr)
    if encoding == "json":
        return _JSONColumn(arr)
    if encoding == "bool":
        return _Column(arr)
    raise SnapshotFormatError(f"unknown column encoding {encoding!r}")


def snapshot_columns(
    batch: pa.RecordBatch,
) -> tuple[list[tuple[str, pa.Array[Any], str]], dict[tuple[str, bool], pa.Array[Any]]]:
    """The columns of a snapshot's table batch, ``(name, array, encoding)`` each in the
    file's order, and its ranks by ``(column, descending)``."""
    columns: list[tuple[str, pa.Array[Any], str]] = []
    ranks: dict[tuple[str, bool], pa.Array[Any]] = {}
    for field, arr in zip(batch.schema, batch.columns, strict=True):
        if field.name.startswith(_RANK + ":"):
            _, column, direction = field.name.rsplit(":", 2)
            ranks[(column, direction == "desc")] = arr
        else:
            columns.append(
                (field.name, arr, (field.metadata or {}).get(_ENCODING, b"json").decode())
            )
    return columns, ranks


def snapshot_info(batch: pa.RecordBatch) -> dict[str, Any]:
    """The ``info`` a snapshot's table batch was written with (see :func:`write_arrow_snapshot`)."""
    info: dict[str, Any] = orjson.loads((batch.schema.metadata or {})[b"pineapple"])
    return info


def index_path_of(table_path: Path) -> Path:
    """The index file beside a snapshot's table file."""
    return table_path.with_name(table_path.name.removesuffix(TABLE_SUFFIX) + INDEX_SUFFIX)


def read_indices(path: Path) -> dict[str, Index]:
    """Deserialize the bitmap indices (they live in this process's heap)."""
    with pa.memory_map(str(path), "r") as source:
        batch = ipc.open_file(source).read_all()
        columns: list[Any] = batch.column("column").to_pylist()
        keys: list[Any] = batch.column("key").to_pylist()
        bitmaps: list[Any] = batch.column("bitmap").to_pylist()
    indices: dict[str, Index] = {}
    # Bounded by the file: one entry per (column, distinct key) the loader wrote.
    for column, key, bitmap in zip(columns, keys, bitmaps, strict=True):
        indices.setdefault(column, {})[orjson.loads(key)] = FrozenBitMap.deserialize(bitmap)
    return indices


class MappedFeedTable(FeedTable):
    """A :class:`FeedTable` whose columns and ranks are read in place from a mapped file.

    Open with :func:`open_mapped_table`. Same read API as ``FeedTable``;
    ``close()`` unmaps (see the module's Guarantees).
    """

    def __init__(
        self,
        source: pa.MemoryMappedFile,
        batch: pa.RecordBatch,
        indices: dict[str, Index],
        *,
        path: Path,
        generation: int = 0,
        remove_on_close: bool = False,
    ) -> None:
        info = snapshot_info(batch)
        arrays, rank_arrays = snapshot_columns(batch)
        columns: dict[str, _Column] = {name: _column(arr, enc) for name, arr, enc in arrays}
        ranks = {key: _FixedColumn(arr, "q") for key, arr in rank_arrays.items()}
        for column in info["index_columns"]:
            indices.setdefault(column, {})
        super().__init__(
            columns,
            info["id_column"],
            indices,
            version=info["version"],
            source=info["source"],
            load_seconds=info["load_seconds"],
        )
        self._mapped: list[_Column] = [*columns.values(), *ranks.values()]
        # The ranks are the mapped int64 views themselves: ``order`` indexes them per row.
        self._ranks.load({key: rank.view for key, rank in ranks.items()}, info["null_ranks"])
        self._rank_arrays: dict[tuple[str, bool], pa.Array[Any]] = dict(rank_arrays)
        """The mapped rank columns as Arrow arrays (a top-k in C++, :meth:`order`)."""
        self._source_file: pa.MemoryMappedFile | None = source
        self._batch: pa.RecordBatch | None = batch
        self._file_bytes = source.size()
        self.path = path
        self.generation = generation
        self._remove_on_close = remove_on_close

    def project(
        self, row_ids: Iterable[int], fields: Sequence[tuple[str, str]]
    ) -> list[dict[str, Any]]:
        rows = list(row_ids)
        values = [(name, self._mapped_column(column).take(rows)) for name, column in fields]
        return [{name: col[i] for name, col in values} for i in range(len(rows))]

    def _mapped_column(self, name: str) -> _Column:
        column = self.column(name)
        assert isinstance(column, _Column)
        return column

    def order(
        self,
        rows: AbstractBitMap,
        order_by: str | None,
        descending: bool = False,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[int]:
        """As :meth:`FeedTable.order`; a first page of a large set (``offset + limit`` under
        a quarter of ``rows``) is selected by Arrow over the mapped ranks, without a Python
        call per row: each row's key is ``rank << 32 | row``, unique, so the ``k`` smallest
        keys are the rows ``heapq.nsmallest`` picks (ties in row order), in that order."""
        ranks = self._rank_arrays.get((order_by, descending)) if order_by is not None else None
        end = None if limit is None else max(0, offset) + max(0, limit)
        if ranks is None or end is None or not 0 < end < len(rows) // 4:
            return super().order(rows, order_by, descending, offset, limit)
        found = rows.to_array()  # array('I'), ascending: viewed by Arrow, not converted
        ids = pa.Array.from_buffers(pa.uint32(), len(found), [None, pa.py_buffer(found)])
        keys: Any = pc.add(pc.shift_left(ranks.take(ids), 32), pc.cast(ids, pa.int64()))
        picked: Any = keys.take(pc.select_k_unstable(keys, end, [("", "ascending")]))
        ordered: Any = pc.bit_wise_and(picked.take(pc.sort_indices(picked)), 0xFFFFFFFF)
        page: list[int] = ordered.to_pylist()
        return page[max(0, offset) :]

    def column_max(self, name: str) -> Any:
        """The largest value of column ``name`` (None: no such column, no value, closed)."""
        column = self._columns.get(name)
        if not isinstance(column, _Column) or not self._len:
            return None
        return pc.max(column.arrow).as_py()

    def mapped_bytes(self) -> int:
        """Bytes of the mapped table file (shared by every process that maps it)."""
        return self._file_bytes

    def nbytes(self) -> int:
        """The mapped file's size plus this process's copy of the indices."""
        if self._nbytes is None:
            total = self._file_bytes
            for index in self._indices.values():
                total += sum(
                    bm.get_statistics()["n_bytes_array_containers"] for bm in index.values()
                )
            self._nbytes = total
        return self._nbytes

    def close(self) -> None:
        """Release every view into the mapping and unmap the file (idempotent)."""
        self._ranks.clear()
        for column in self._mapped:
            column.release()
        self._mapped.clear()
        self._columns = {}
        self._indices = {}
        self._batch = None
        self._rank_arrays = {}
        if self._source_file is not None:
            self._source_file.close()
            self._source_file = None
        if self._remove_on_close:  # the loader's own files: nobody else opens them by name
            stem = self.path.with_name(self.path.name.removesuffix(TABLE_SUFFIX))
            for suffix in (TABLE_SUFFIX, INDEX_SUFFIX):  # bounded: two files
                stem.with_name(stem.name + suffix).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # its folder, once empty
                stem.parent.rmdir()

    def __repr__(self) -> str:
        return f"MappedFeedTable({self._len} rows, path={str(self.path)!r})"


def open_mapped_table(
    stem: Path, *, generation: int = 0, remove_on_close: bool = False
) -> MappedFeedTable:
    """Map the snapshot written by :func:`write_feed_snapshot` at ``stem`` (read-only);
    ``remove_on_close``: its files are unlinked when the table closes (a loader's own)."""
    table_path = stem.with_name(stem.name + TABLE_SUFFIX)
    index_path = stem.with_name(stem.name + INDEX_SUFFIX)
    try:
        indices = read_indices(index_path)
        source = pa.memory_map(str(table_path), "r")
    except (OSError, pa.ArrowException) as exc:
        raise SnapshotFormatError(f"cannot map snapshot {table_path}: {exc}") from exc
    try:
        reader = ipc.open_file(source)
        if reader.num_record_batches != 1:
            raise SnapshotFormatError(
                f"snapshot {table_path}: {reader.num_record_batches} record batches, want 1"
            )
        batch = reader.get_batch(0)
        return MappedFeedTable(
            source,
            batch,
            indices,
            path=table_path,
            generation=generation,
            remove_on_close=remove_on_close,
        )
    except (pa.ArrowException, KeyError, ValueError) as exc:
        source.close()
        raise SnapshotFormatError(f"cannot map snapshot {table_path}: {exc}") from exc
    except BaseException:
        source.close()
        raise
