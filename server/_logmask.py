"""Masking secrets in the server's log lines.

Every record that reaches a root handler passes :class:`LogMask`, which masks
DSN passwords and every secret of the serving snapshot's resource manager
(secret params, DSN passwords, ``${VAR}`` values) in the formatted message,
in the traceback text and in every string field passed with ``extra=``
(what ``--log-format json`` writes beside the message). Messages logged by the resource runtime are
already redacted; this catches what operators, libraries and tracebacks say.

Guarantees:
- The filter reads ``holder.current`` (one attribute read, no lock) and the
  manager's secrets, a frozenset fixed at ``start``: no lock is taken on the
  logging path, and a record is never dropped (``filter`` returns True).
- Masking is linear in the message (``pineapple.resource.lowlevel.redact``).
"""

from __future__ import annotations

import logging

from pineapple import resource

from ._log_format import extra_fields
from ._snapshot import SnapshotHolder

__all__ = ["LogMask", "install_log_mask", "remove_log_mask"]

_FORMATTER = logging.Formatter()


class LogMask(logging.Filter):
    """A handler filter that masks secrets in each record's message and traceback."""

    def __init__(self, holder: SnapshotHolder) -> None:
        super().__init__()
        self._holder = holder

    def _redact(self, text: str) -> str:
        snap = self._holder.current
        if snap is None:
            return resource.lowlevel.redact(text)
        return snap.manager.redact(text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = self._redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        for key, value in extra_fields(record).items():
            if isinstance(value, str):
                setattr(record, key, self._redact(value))
        return True


def install_log_mask(holder: SnapshotHolder) -> LogMask:
    """Add a :class:`LogMask` to every root handler; returns it (for ``remove_log_mask``)."""
    mask = LogMask(holder)
    for handler in logging.getLogger().handlers:
        handler.addFilter(mask)
    return mask


def remove_log_mask(mask: LogMask) -> None:
    """Take ``mask`` off every root handler."""
    for handler in logging.getLogger().handlers:
        handler.removeFilter(mask)
