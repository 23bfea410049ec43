"""``json_file`` / ``csv_file``: lookup tables and candidate lists read from files.

Value shapes (what the operators expect):

- ``format: "mapping"``: a :class:`FileMapping` (a ``dict`` with string keys)
  for ``transform_resource_lookup``. From a JSON object as is; or, with
  ``key``, from a list of row objects (JSON array or CSV rows) keyed by the
  text of ``row[key]`` (``3`` and ``3.0`` both become ``"3"``), the value being
  the whole row or, with ``value_column``, one column of it.
- ``format: "list"``: a :class:`FileRows` (a ``list`` of item dicts) for
  ``recall_resource``.
- ``format: "auto"`` (default): ``mapping`` when ``key`` is given or the JSON
  document is an object, ``list`` otherwise.

A refresh whose file has the same modification time and size as at the last
successful load returns ``NOT_MODIFIED`` without reading it. The factory does
no I/O. Read and parse errors are :class:`SourceError` naming the file.

Only regular files of at most ``max_bytes`` (default 512 MiB) are read: the
path is opened non-blocking (a FIFO without a writer cannot hang the open),
the *opened* descriptor is checked with ``fstat`` (no swap between check and
read), and anything else (``/dev/zero``, a FIFO, a directory, a socket) or
anything larger is refused with :class:`pineapple.ConfigError` naming the
path before a byte is read. At most ``max_bytes + 1`` bytes are ever read, so
a file growing during the read is refused too.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from collections.abc import Iterable
from typing import Any

import orjson

from pineapple import ConfigError, ParamSpec, ResourceSchema, register_resource
from pineapple._file_kind import file_kind
from pineapple.resource import NOT_MODIFIED
from pineapple.resource.lowlevel import redact, redact_value

from ._errors import SourceError
from ._file_values import FileMapping, FileRows
from ._printing import estimate_sizeof, human_bytes, json_preview
from ._shared import FILE_CODEC

__all__ = [
    "CSV_FILE_SCHEMA",
    "JSON_FILE_SCHEMA",
    "FileMapping",
    "FileRows",
    "FileTableFetcher",
    "FileTablePrinter",
]

FORMATS = ("auto", "mapping", "list")
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def key_text(value: Any) -> str:
    """A row's key as mapping text: strings as is, integral numbers without ``.0``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cell(text: str) -> Any:
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


class FileTableFetcher:
    """Reads ``path`` as JSON or CSV into a :class:`FileMapping` or :class:`FileRows`."""

    def __init__(self, params: dict[str, Any], kind: str) -> None:
        self.kind = kind  # "json" or "csv"
        self.path = str(params["path"])
        if not self.path:
            raise ConfigError("parameter 'path': must not be empty")
        self.format = params.get("format") or "auto"
        if self.format not in FORMATS:
            raise ConfigError(f"parameter 'format': must be one of {FORMATS}, got {self.format!r}")
        self.key: str | None = params.get("key") or None
        self.value_column: str | None = params.get("value_column") or None
        if self.format == "list" and (self.key or self.value_column):
            raise ConfigError("parameter 'key': not used with format 'list'")
        if self.value_column and not self.key:
            raise ConfigError("parameter 'value_column': needs 'key'")
        if kind == "csv" and self.format == "mapping" and not self.key:
            raise ConfigError("parameter 'key': required for a csv_file with format 'mapping'")
        self.delimiter = params.get("delimiter") or ","
        if len(self.delimiter) != 1:
            raise ConfigError("parameter 'delimiter': must be one character")
        self.infer_types = params.get("infer_types", True)
        max_bytes = params.get("max_bytes")
        self.max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
        if self.max_bytes <= 0:
            raise ConfigError(f"parameter 'max_bytes': must be > 0, got {self.max_bytes}")
        self._stamp: tuple[int, int, int, int] | None = None

    def __call__(self) -> FileMapping | FileRows | object:
        try:
            # A first look by path: a socket cannot even be opened, so say why here.
            self._refuse(os.stat(self.path))
            fd = os.open(self.path, _OPEN_FLAGS)
        except OSError as exc:
            raise SourceError(f"{self.kind}_file {self.path}: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            self._refuse(st)  # what was opened, whatever the path points to by now
            # The inode changes on a rename-save (editors, ConfigMap swaps) even
            # when size and mtime happen to match; ctime on any in-place write.
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
            if stamp == self._stamp:
                return NOT_MODIFIED
            data = self._read(fd, st.st_size)
        except OSError as exc:
            raise SourceError(f"{self.kind}_file {self.path}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        value = self._parse(data)
        value.source = self.path
        value.stamp = stamp
        value.nbytes = estimate_sizeof(value)  # once, here on the refresh thread
        self._stamp = stamp
        return value

    def carry_over(self, value: Any) -> None:
        """Resume change detection from the value being served (a reload carried it
        over, a rollback restored it, a forced refresh wants it replaced)."""
        stamp = getattr(value, "stamp", None)
        self._stamp = stamp if isinstance(stamp, tuple) else None

    def _refuse(self, st: os.stat_result) -> None:
        """ConfigError unless ``st`` is a regular file of at most ``max_bytes``."""
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"{self.kind}_file {self.path}: is a {file_kind(st.st_mode)}, not a regular "
                "file; refused without reading"
            )
        if st.st_size > self.max_bytes:
            raise self._too_big(f"{st.st_size} bytes")

    def _too_big(self, size: str) -> ConfigError:
        return ConfigError(
            f"{self.kind}_file {self.path}: {size}, over max_bytes {self.max_bytes}; "
            "refused (the param 'max_bytes' raises the limit)"
        )

    def _read(self, fd: int, size_hint: int) -> bytearray:
        """At most ``max_bytes`` bytes of ``fd``; ConfigError if there are more.

        Reads into one buffer sized from ``fstat`` (plus one byte to see
        growth), so a file costs its size once, as ``read()`` did.
        """
        limit = self.max_bytes + 1
        data = bytearray(min(size_hint + 1, limit))
        n = 0
        # Bounded: each pass reads at least one byte or ends; n never passes limit.
        while True:
            if n == len(data):
                if n >= limit:
                    break
                data += bytes(min(max(n, _CHUNK), limit - n))  # it grew: room for more
            with memoryview(data) as view:
                got = os.readv(fd, [view[n:]])
            if got == 0:
                break
            n += got
        del data[n:]
        if n > self.max_bytes:
            raise self._too_big("grew past that while read")
        return data

    def _fail(self, why: str) -> SourceError:
        return SourceError(f"{self.kind}_file {self.path}: {why}")

    def _parse(self, data: bytes | bytearray) -> FileMapping | FileRows:
        if self.kind == "json":
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise self._fail(f"invalid JSON: {exc}") from None
        else:
            doc = self._csv_rows(data)
        if isinstance(doc, dict):
            if self.format == "list" or self.key:
                raise self._fail("is a JSON object; format 'list' and 'key' need an array of rows")
            return FileMapping(doc)
        if not isinstance(doc, list):
            raise self._fail(f"must hold an object or an array, not {type(doc).__name__}")
        for i, row in enumerate(doc):
            if not isinstance(row, dict):
                raise self._fail(f"row {i} is {type(row).__name__}, not an object")
        if self.key:
            return self._keyed(doc)
        if self.format == "mapping":
            raise self._fail("is an array; format 'mapping' needs 'key'")
        return FileRows(doc)

    def _csv_rows(self, data: bytes | bytearray) -> list[dict[str, Any]]:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise self._fail(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=self.delimiter)
        try:
            rows = list(reader)
        except csv.Error as exc:
            raise self._fail(f"invalid CSV at line {reader.line_num}: {exc}") from None
        for number, row in enumerate(rows, start=2):
            if None in row or any(v is None for v in row.values()):
                raise self._fail(f"line {number}: wrong number of fields")
        if not self.infer_types:
            return [dict(row) for row in rows]
        return [{k: _cell(v) for k, v in row.items()} for row in rows]

    def _keyed(self, rows: Iterable[dict[str, Any]]) -> FileMapping:
        key, column = self.key, self.value_column
        assert key is not None
        table = FileMapping()
        for i, row in enumerate(rows):
            if row.get(key) is None:
                raise self._fail(f"row {i} has no {key!r}")
            text = key_text(row[key])
            if text in table:
                raise self._fail(f"duplicate key {text!r} (row {i})")
            if column is not None and column not in row:
                raise self._fail(f"row {i} has no {column!r}")
            table[text] = row[column] if column is not None else row
        return table


class FileTablePrinter:
    """Shape, size and path of a file table."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def summarize(self, value: Any) -> str:
        source = getattr(value, "source", "") or "?"
        size = human_bytes(self.size_of(value))
        if isinstance(value, dict):
            return f"{self.kind}_file: mapping of {len(value)} keys, ~{size}, from {source}"
        return f"{self.kind}_file: list of {len(value)} rows, ~{size}, from {source}"

    def describe(self, value: Any) -> str:
        return redact(f"{self.summarize(value)}\n{json_preview(redact_value(value))}")

    def size_of(self, value: Any) -> int:
        """The bytes the table holds (measured at load; estimated for other values)."""
        nbytes = getattr(value, "nbytes", 0)
        return nbytes if isinstance(nbytes, int) and nbytes > 0 else estimate_sizeof(value)


def _params(kind: str) -> dict[str, ParamSpec]:
    params = {
        "path": ParamSpec(
            type="string",
            required=True,
            path=True,
            description=f"Path of the {kind} file (relative: to the config file's folder).",
        ),
        "format": ParamSpec(
            type="string",
            default="auto",
            description="mapping (lookup table), list (candidate rows) or auto.",
        ),
        "key": ParamSpec(
            type="string",
            description="Row field whose text keys the mapping (makes format mapping).",
        ),
        "value_column": ParamSpec(
            type="string",
            description="With key: map each key to this field instead of the whole row.",
        ),
        "max_bytes": ParamSpec(
            type="int",
            # No declared default, so compiled configs stay as they were; absent: 512 MiB.
            description="Largest file size read, in bytes (absent: 512 MiB); larger is refused.",
        ),
    }
    if kind == "csv":
        params["delimiter"] = ParamSpec(type="string", default=",", description="Field separator.")
        params["infer_types"] = ParamSpec(
            type="bool",
            default=True,
            description="Turn integer and decimal cells into numbers (else all text).",
        )
    return params


JSON_FILE_SCHEMA = ResourceSchema(
    name="json_file",
    description=(
        "A JSON file as a lookup table (object, or rows keyed by 'key') or a list of item "
        "rows; reloaded when the file changes (mtime, size, inode, ctime)."
    ),
    default_interval=60,
    params=_params("json"),
    printer=FileTablePrinter("json"),
    codec=FILE_CODEC,
)

CSV_FILE_SCHEMA = ResourceSchema(
    name="csv_file",
    description=(
        "A CSV file with a header row as a list of item rows, or a lookup table keyed by "
        "'key'; reloaded when the file changes (mtime, size, inode, ctime)."
    ),
    default_interval=60,
    params=_params("csv"),
    printer=FileTablePrinter("csv"),
    codec=FILE_CODEC,
)

register_resource(JSON_FILE_SCHEMA, lambda params: FileTableFetcher(params, "json"))
register_resource(CSV_FILE_SCHEMA, lambda params: FileTableFetcher(params, "csv"))
