"""How MySQL and SQLite driver values become JSON values, one format per column.

Shared by the in-process table build and the loader child process
(``_feed_worker``), so both produce the same values from the same rows.

MySQL values are decoded by the column's SQL type, once per column, through
pymysql's ``conv`` table (``MYSQL_CONVERSIONS``), from the text the server
sends; no value is turned into a Python ``datetime`` first:

- ``DATETIME`` / ``TIMESTAMP``: ``YYYY-MM-DDTHH:MM:SS[.ffffff]``, the
  fraction with as many digits as the column declares (the server's text with
  ``T`` for the space); ``DATE``: ``YYYY-MM-DD``; a zero date
  (``0000-00-00``, ``0000-00-00 00:00:00``) is null; a date with a zero month
  or day that the server holds (``2026-00-00``) is kept as its text;
- ``TIME``: ``[-]HH:MM:SS[.ffffff]`` as the server sends it (hours may have
  three digits: ``-838:59:59``);
- ``DECIMAL``: a float (as before: at most 17 significant digits survive);
- binary values (``BINARY``, ``VARBINARY``, ``BLOB``, ``BIT``,
  ``GEOMETRY``): standard base64 with padding, as Go's ``encoding/json``
  encodes a ``[]byte`` (:func:`json_converter`); text columns stay text.

SQLite hands over integers, floats, text and blobs; blobs become base64 the
same way.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from pymysql.constants import FIELD_TYPE
from pymysql.converters import conversions, through

__all__ = ["MYSQL_CONVERSIONS", "json_converter"]

_ZERO_DATE = "0000-00-00"


def _date_text(text: str) -> str | None:
    """A DATE as the server wrote it; the zero date is null."""
    return None if text.startswith(_ZERO_DATE) else text


def _datetime_text(text: str) -> str | None:
    """A DATETIME or TIMESTAMP in ISO 8601 (``T`` for the space); the zero date is null."""
    return None if text.startswith(_ZERO_DATE) else text.replace(" ", "T", 1)


MYSQL_CONVERSIONS: dict[Any, Any] = {
    **conversions,
    FIELD_TYPE.DATE: _date_text,
    FIELD_TYPE.NEWDATE: _date_text,
    FIELD_TYPE.DATETIME: _datetime_text,
    FIELD_TYPE.TIMESTAMP: _datetime_text,
    FIELD_TYPE.TIME: through,  # the server's text as is (pymysql then calls nothing)
    FIELD_TYPE.DECIMAL: float,
    FIELD_TYPE.NEWDECIMAL: float,
}
"""pymysql's ``conv`` for every connection of ``feed_data`` (loader child and thread alike)."""


def _base64(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    return value


def json_converter(column: Sequence[Any]) -> Callable[[Any], Any] | None:
    """The conversion of a column's non-null values (None: they are already JSON values).

    Bytes become standard base64 text. pymysql decodes every value of a
    field the same way (text with the connection's charset, bytes for a
    binary one), so the first non-null value tells the column's kind; the
    conversion itself checks each value, so a SQLite column that mixes blobs
    into text keeps its text.

    >>> json_converter([None, b"\\x00\\xff"])(b"\\x00\\xff")
    'AP8='
    >>> json_converter([1, 2]) is None
    True
    """
    sample = next((v for v in column if v is not None), None)
    if isinstance(sample, bytes | bytearray | memoryview):
        return _base64
    return None
