"""``feed_data`` with ``loader: "arrow"``: a MySQL table read straight into Arrow and written
as the mapped snapshot, in a child process; the value maps those files.

The ``process`` and ``thread`` loaders make a Python object of every cell
(pymysql parses each field in Python, the build indexes it value by value):
about 20 s of interpreter time for a million rows. This loader never does:
the loader child (forked from the forkserver of ``_feed_worker``) reads the
query with connectorx (Rust) as Arrow record batches, turns each column into
the snapshot's encoding with Arrow compute (``DECIMAL`` to ``float64``,
temporal values to ISO 8601 text, binary to base64 text), computes the sort
ranks of ``order_columns`` and the bitmap index of each ``index_columns``
(one pass over the distinct values, the rows grouped by an Arrow sort), and
writes the snapshot pair of ``_mapped_table`` (:func:`write_arrow_snapshot`)
into a folder of its own. The parent maps it (:func:`open_mapped_table`): the
value is a :class:`~resources._mapped_table.MappedFeedTable`, the same table
a ``--workers`` worker or a fleet pod serves; its files are removed when it
closes. Publishing it (``--workers``, a fleet producer) links its files
instead of encoding the table again. With ``spec["base"]`` (``delta_query``)
the child reads the delta and upserts it into that snapshot's table
(``_feed_delta``); the ranks and indices of unchanged columns are the
table's own.

Frames from the child (``_feed_worker``'s pipe): ``H`` + pickled column
names (the parent checks ``id_column``, ``index_columns`` and
``order_columns`` against them and stops the load at once when one is
missing), ``P`` after each record batch read and each column built (so the
per-frame timeout bounds every wait for the server and every step), ``E``
when the files are written, ``X`` + error text.

Bounds (as the other loaders): each frame within the connect and read
timeouts plus 5 s, the whole load within ``load_timeout_ms``
(:class:`~resources._deadline.LoadDeadline`); a cancel kills the child.
After any failure the child is killed, then its query on the server: the
query carries a comment naming this load (``/* pineapple-load <uuid> */``),
and :func:`~resources._query_kill.kill_tagged_query` kills the server
thread running it. The password travels to the child over the forkserver's
socket and is masked in every error text (also URL-quoted, as connectorx's
connection string holds it).

Values: integers as ``int64`` (an unsigned value past 2**63 - 1 makes the
column ``json``), floats and ``DECIMAL`` as ``float64`` (as the other
loaders: at most 17 significant digits), text as text, ``DATE`` as
``YYYY-MM-DD``, ``DATETIME`` / ``TIMESTAMP`` as ``YYYY-MM-DDTHH:MM:SS`` with
six fraction digits when a value of the column has a fraction (the other
loaders write the column's declared digits), ``TIME`` and other types as
Python formats them, binary values as standard base64 text. Indices and
ranks are those of ``_feed_index`` and ``_feed_ranks`` (same keys, list
cells split the same way, dense ranks with NULL last).
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import shutil
import tempfile
import time
import urllib.parse
import uuid
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import FrozenBitMap

from ._cancel import Cancel
from ._deadline import LoadDeadline
from ._errors import SourceError, error_text
from ._feed_delta import Columns, Merged, merge_delta
from ._feed_index import list_elements, lists_in
from ._feed_worker import ColumnFrames, read_in_child
from ._mapped_table import MappedFeedTable, open_mapped_table, write_arrow_snapshot

__all__ = [
    "BATCH_ROWS",
    "arrow_column",
    "arrow_index",
    "arrow_ranks",
    "connectorx_url",
    "read_arrow_snapshot",
]

BATCH_ROWS = 65536
"""Rows per record batch the child reads (a ``P`` frame after each)."""

_STEM = "table"


def connectorx_url(connect_kwargs: dict[str, Any]) -> str:
    """The connectorx connection string of pymysql's ``connect_kwargs`` (TCP only)."""
    if connect_kwargs.get("unix_socket"):
        raise SourceError("loader 'arrow' connects over TCP; this DSN names a unix socket")
    quote = urllib.parse.quote
    user = quote(str(connect_kwargs.get("user") or ""), safe="")
    password = quote(str(connect_kwargs.get("password") or ""), safe="")
    host = str(connect_kwargs.get("host") or "127.0.0.1")
    port = int(connect_kwargs.get("port") or 3306)
    database = quote(str(connect_kwargs.get("database") or ""), safe="")
    return f"mysql://{user}:{password}@{host}:{port}/{database}"


def _secrets(connect_kwargs: dict[str, Any]) -> tuple[str, ...]:
    password = str(connect_kwargs.get("password") or "")
    quoted = urllib.parse.quote(password, safe="")
    return tuple(s for s in dict.fromkeys((password, quoted)) if s)


# -- columns, ranks, indices (Arrow compute; no Python object per cell) ----------------------


def _python_cells(arr: pa.Array[Any], convert: Callable[[Any], Any]) -> pa.Array[Any]:
    """A column of a rare type (TIME, binary, ...) as text, cell by cell."""
    return pa.array(
        [None if v is None else convert(v) for v in arr.to_pylist()], type=pa.large_string()
    )


def _iso_timestamps(arr: pa.Array[Any]) -> pa.Array[Any]:
    micros: Any = pc.cast(pc.cast(arr, pa.timestamp("us"), safe=False), pa.int64())
    seconds: Any = pc.floor(pc.divide(pc.cast(micros, pa.float64()), 1_000_000.0))
    seconds = pc.cast(seconds, pa.int64())
    fraction = pc.any(pc.not_equal(pc.multiply(seconds, 1_000_000), micros)).as_py()
    whole: Any = pc.cast(seconds, pa.timestamp("s"))
    text = pc.strftime(whole, format="%Y-%m-%dT%H:%M:%S")
    if fraction:
        digits: Any = pc.utf8_lpad(
            pc.cast(pc.subtract(micros, pc.multiply(seconds, 1_000_000)), pa.string()), 6, "0"
        )
        text = pc.binary_join_element_wise(text, digits, ".")
    joined: pa.Array[Any] = pc.cast(text, pa.large_string())
    return joined


def _json_column(arr: pa.Array[Any]) -> pa.Array[Any]:
    return pa.array(
        [None if v is None else orjson.dumps(v, default=str) for v in arr.to_pylist()],
        type=pa.large_binary(),
    )


def arrow_column(arr: pa.Array[Any]) -> tuple[pa.Array[Any], str]:
    """A column as the snapshot stores it: ``(array, encoding)`` (see the module's Values)."""
    kind = arr.type
    if pa.types.is_integer(kind):
        try:
            return pc.cast(arr, pa.int64()), "int64"
        except pa.ArrowInvalid:  # an unsigned value past 2**63 - 1
            return _json_column(arr), "json"
    if pa.types.is_decimal(kind):  # through its text: a float as Python's float() rounds it
        return pc.cast(pc.cast(arr, pa.string()), pa.float64()), "float64"
    if pa.types.is_floating(kind):
        return pc.cast(arr, pa.float64()), "float64"
    if pa.types.is_boolean(kind):
        return arr, "bool"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return pc.cast(arr, pa.large_string()), "string"
    if pa.types.is_date(kind):
        return pc.cast(pc.cast(arr, pa.date32()), pa.large_string()), "string"
    if pa.types.is_timestamp(kind):
        return _iso_timestamps(arr), "string"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return _python_cells(arr, lambda v: base64.b64encode(v).decode("ascii")), "string"
    if pa.types.is_time(kind) or pa.types.is_duration(kind):
        return _python_cells(arr, str), "string"
    return _json_column(arr), "json"


def arrow_ranks(arr: pa.Array[Any]) -> tuple[pa.Array[Any], pa.Array[Any], int]:
    """Ascending and descending dense ranks of a column, and NULL's rank (last, both ways)."""
    null_rank = int(pc.count_distinct(arr, mode="only_valid").as_py())
    ranked = pc.rank(arr, sort_keys="ascending", tiebreaker="dense")  # NULL last
    ascending: Any = pc.subtract(pc.cast(ranked, pa.int64()), 1)
    nulls = pc.is_null(arr)
    descending: Any = pc.if_else(nulls, null_rank, pc.subtract(null_rank - 1, ascending))
    if arr.null_count:
        ascending = pc.if_else(nulls, null_rank, ascending)
    return ascending, pc.cast(descending, pa.int64()), null_rank


def arrow_index(arr: pa.Array[Any]) -> list[tuple[Any, FrozenBitMap]]:
    """The bitmap index of a column: ``(key, rows)`` per distinct value, or per element of a
    list-valued text column (as :func:`~resources._feed_index.build_index`)."""
    encoded: Any = pc.dictionary_encode(arr)
    distinct = encoded.dictionary.to_pylist()
    codes = encoded.indices
    order = pc.cast(pc.sort_indices(codes), pa.uint32())
    rows = memoryview(order.buffers()[1]).cast("B")
    counts = [0] * len(distinct)
    tally = pc.value_counts(codes)
    for code, count in zip(  # bounded: one entry per distinct value (and NULL)
        tally.field("values").to_pylist(), tally.field("counts").to_pylist(), strict=True
    ):
        if code is not None:
            counts[code] = count
    groups: list[array[int]] = []
    start = 0
    for count in counts:  # the rows of each code, ascending (a stable sort)
        part = array("I")
        part.frombytes(rows[start * 4 : (start + count) * 4])
        groups.append(part)
        start += count
    if not lists_in(distinct):
        return [(key, FrozenBitMap(part)) for key, part in zip(distinct, groups, strict=True)]
    merged: dict[Any, array[int]] = {}
    for value, part in zip(distinct, groups, strict=True):  # bounded: the distinct values
        for element in list_elements(value):
            have = merged.get(element)
            if have is None:
                merged[element] = array("I", part)
            else:
                have.extend(part)
    return [(key, FrozenBitMap(part)) for key, part in merged.items()]


# -- the child ---------------------------------------------------------------------------


def _read_columns(out: Any, connect_kwargs: dict[str, Any], sql: str) -> Columns:
    """Read ``sql`` with connectorx; each column as the snapshot stores it (H and P frames)."""
    import connectorx  # the Rust reader: imported by the child alone
    import pymysql

    # connectorx's connection pool retries a refused login for 30 s before it says so:
    # one plain connection (bounded by its connect_timeout) names a wrong password at once.
    pymysql.connect(**connect_kwargs).close()
    reader = connectorx.read_sql(
        connectorx_url(connect_kwargs), sql, return_type="arrow_stream", batch_size=BATCH_ROWS
    )
    schema = reader.schema
    out.send_bytes(b"H" + pickle.dumps(list(schema.names), pickle.HIGHEST_PROTOCOL))
    batches = []
    for batch in reader:  # bounded by the parent: a frame per batch within its timeout
        batches.append(batch)
        out.send_bytes(b"P")
    table = pa.Table.from_batches(batches, schema=schema).combine_chunks()
    del batches
    columns: Columns = []
    for name, chunked in zip(table.column_names, table.columns, strict=True):
        arr: Any = chunked.chunk(0) if chunked.num_chunks else pa.array([], chunked.type)
        columns.append((name, *arrow_column(arr)))
        out.send_bytes(b"P")
    return columns


def _unchanged(kept: Merged, column: str) -> bool:
    """Whether the table's ranks of ``column`` hold for the merged one (both ways)."""
    return column not in kept.changed and all(
        (column, descending) in kept.ranks for descending in (False, True)
    )


def _arrow_child(
    out: Any,
    connect_kwargs: dict[str, Any],
    sql: str,
    nice: int,
    folder: str,
    spec: dict[str, Any],
) -> None:
    """The child's body: read ``sql`` into Arrow, write the snapshot into ``folder``; with
    ``spec["base"]`` (a snapshot's table file) ``sql`` is a delta upserted into that
    table's rows (``_feed_delta``)."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    os.environ["RUST_BACKTRACE"] = "0"  # a panic's message is sent as the X frame
    try:
        started = time.monotonic()
        columns = _read_columns(out, connect_kwargs, sql)
        kept = None
        if spec.get("base"):
            kept = merge_delta(Path(spec["base"]), columns, spec["id_column"])
            columns = kept.columns
            out.send_bytes(b"P")
        by_name = {name: arr for name, arr, _ in columns}
        ranks: dict[tuple[str, bool], pa.Array[Any]] = {}
        null_ranks: dict[str, int] = {}
        for name in spec["order_columns"]:
            if kept is not None and _unchanged(kept, name) and name in kept.null_ranks:
                for way in (False, True):  # bounded: both ways
                    ranks[(name, way)] = kept.ranks[(name, way)]
                null_ranks[name] = kept.null_ranks[name]
                continue
            ascending, descending, null_ranks[name] = arrow_ranks(by_name[name])
            ranks[(name, False)], ranks[(name, True)] = ascending, descending
            out.send_bytes(b"P")
        indices: list[tuple[str, list[tuple[Any, FrozenBitMap]]]] = []
        for name in spec["index_columns"]:
            if kept is not None and name not in kept.changed and name in kept.indices:
                indices.append((name, kept.indices[name]))
                continue
            indices.append((name, arrow_index(by_name[name])))
            out.send_bytes(b"P")
        info = {
            "id_column": spec["id_column"],
            "version": spec["version"],
            "source": spec["source"],
            "load_seconds": time.monotonic() - started,
            "rows": len(columns[0][1]) if columns else 0,
            "index_columns": list(spec["index_columns"]),
            "null_ranks": null_ranks,
        }
        write_arrow_snapshot(Path(folder) / _STEM, columns, ranks, indices, info)
        out.send_bytes(b"E")
    except BaseException as exc:  # whatever it is (connectorx panics with a BaseException)
        with contextlib.suppress(OSError):
            out.send_bytes(b"X" + error_text(exc, _secrets(connect_kwargs)).encode())
    finally:
        out.close()


def read_arrow_snapshot(
    connect_kwargs: dict[str, Any],
    sql: str,
    *,
    check: Callable[[list[str]], None],
    spec: dict[str, Any],
    where: str,
    timeout: float,
    nice: int,
    cancel: Cancel,
    deadline: LoadDeadline,
) -> MappedFeedTable:
    """Load ``sql`` with the Arrow loader (see the module); the mapped table.

    ``check(names)`` raises (a ``ConfigError``) when the query lacks a column
    the params name; ``spec``: ``id_column``, ``index_columns``,
    ``order_columns``, ``version`` (JSON-able) and ``source``, and ``base``
    (the table file of a snapshot, or None): ``sql`` reads a delta of that
    table (``_feed_delta``). Raises
    :class:`SourceError` on any failure of the read or the child.
    """
    folder = Path(tempfile.mkdtemp(prefix="pineapple-feed-"))
    tag = f"pineapple-load {uuid.uuid4().hex}"

    def sink(names: list[str], frames: ColumnFrames) -> None:
        check(names)
        while True:  # bounded: the child sends a P frame per batch and per built part
            kind, _ = frames.read()
            if kind == b"E":
                return
            if kind != b"P":
                raise SourceError(f"{where}: loader process sent a bad frame {kind!r}")

    try:
        read_in_child(
            connect_kwargs,
            f"/* {tag} */ {sql}",
            sink,
            where=where,
            timeout=timeout,
            nice=nice,
            cancel=cancel,
            deadline=deadline,
            target=_arrow_child,
            extra=(str(folder), spec),
            query_tag=tag,
        )
        return open_mapped_table(folder / _STEM, remove_on_close=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
