"""``json_converter``: how to turn a column of database driver values into JSON values.

Shared by the in-process table build and the loader child process
(``_feed_worker``), so both produce the same values from the same rows.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["json_converter"]


def json_converter(column: Sequence[Any]) -> Callable[[Any], Any] | None:
    """The conversion of a column's non-null values (None: they are already JSON values).

    Temporal values become ISO 8601 text, ``Decimal`` a float, bytes UTF-8 text;
    the first non-null value decides, as a column has one SQL type.

    >>> json_converter([None, decimal.Decimal("0.5")])(decimal.Decimal("0.5"))
    0.5
    >>> json_converter([1, 2]) is None
    True
    """
    sample = next((v for v in column if v is not None), None)
    if isinstance(sample, datetime.datetime | datetime.date | datetime.time):
        return lambda v: v.isoformat()
    if isinstance(sample, datetime.timedelta):
        return str
    if isinstance(sample, decimal.Decimal):
        return float
    if isinstance(sample, bytes | bytearray):
        return lambda v: bytes(v).decode("utf-8", "replace")
    return None
