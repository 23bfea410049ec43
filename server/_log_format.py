"""How every process of ``pineapple serve`` writes its log: text lines or JSON lines.

``--log-format text`` (the default) writes ``TIME PID LEVEL LOGGER: MESSAGE``;
``--log-format json`` writes one JSON object a line with ``time`` (UTC,
RFC 3339 with milliseconds), ``level``, ``logger``, ``message`` and ``pid``,
plus ``exc`` (the traceback text) when there is one and every field a
caller passed with ``extra=`` (``resource``, ``version``, ``summary`` for a
swap; ``method``, ``path``, ``status``, ``duration_ms`` for a request). The
supervisor and each worker configure the same format from the same
``Config``, so a pod's processes write one format.

Forged lines: a message may carry request data (the access log's decoded
path, an operator's log of a field, an error quoting a value). In text, its
control characters (C0, DEL, C1, U+2028/U+2029) are escaped (``\\n``,
``\\x1b``, ``\\u2028``): a record is one line, and no request can write a fake
line or a terminal escape. A traceback keeps its lines, each indented by two
spaces (its other control characters escaped): only a record's own first line
starts at column 0, with its time. JSON lines escape them as JSON does.

Secrets: the format runs after the handler's filters, so the ``LogMask``
filter (``_logmask.py``) has already masked the message, the traceback and
every string field.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from typing import Any

import orjson

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "TextFormatter",
    "add_log_flags",
    "configure_logging",
    "escape_controls",
    "extra_fields",
]

LOG_FORMATS = ("text", "json")
"""The values of ``--log-format``."""
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
"""The values of ``--log-level``."""

_TEXT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"
# Attributes every LogRecord has (and what formatting adds): the rest came from ``extra=``.
# uvicorn adds ``color_message`` (the message with terminal colours): not a field either.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters that end a line or drive a terminal (one class: linear in the text)."""
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\n``, ``\\x1b``).

    Linear in ``text``; the same string back when it has none.
    """
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escaped, text)


class TextFormatter(logging.Formatter):
    """``--log-format text``: one line a record, control characters escaped (see above)."""

    def __init__(self) -> None:
        super().__init__(_TEXT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return _block(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _block(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_text and not record.exc_text.startswith("  "):
            # Set by a filter (LogMask) with the plain formatter: indented here once.
            record.exc_text = _block(record.exc_text)
        return super().format(record)


def _block(text: str) -> str:
    """A traceback's lines, each escaped and indented (no line of it starts a record)."""
    return "\n".join("  " + escape_controls(line) for line in text.split("\n"))


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a caller passed to the log call with ``extra=`` (name -> value)."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, pid, then the extra fields.

    A field named like one of the first five is written as ``extra_NAME``; a value
    JSON cannot hold is written as its ``str``. Bounded by the record: one
    pass over its attributes.
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _rfc3339(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for key, value in extra_fields(record).items():
            line[f"extra_{key}" if key in line else key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def _rfc3339(created: float) -> str:
    whole = int(created)
    millis = int((created - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def add_log_flags(parser: argparse.ArgumentParser, *, level_help: str, format_help: str) -> None:
    """``--log-level`` (default ``info``) and ``--log-format`` (default ``text``), spelled
    alike by every long-running command (``serve``, ``publish``)."""
    parser.add_argument("--log-level", default="info", choices=LOG_LEVELS, help=level_help)
    parser.add_argument("--log-format", default="text", choices=LOG_FORMATS, help=format_help)


def configure_logging(level: str, log_format: str = "text") -> None:
    """Send the root logger to standard error in ``log_format`` at ``level``.

    Like ``logging.basicConfig``, a no-op when the root logger already has a
    handler (an embedding application configured logging itself).
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}: {log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler])
