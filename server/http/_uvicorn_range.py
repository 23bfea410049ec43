"""The uvicorn releases the HTTP edge was written for, checked when a server starts.

The edge subclasses uvicorn's server and its httptools protocol and relies on
their private parts, which any release may change: ``_protocol.py`` (the one
protocol class) and ``_graceful.py`` list what they use. ``pyproject.toml``
pins :data:`UVICORN_RANGE`; an install
that got another version anyway (``pip install --no-deps``, a constraints
file, a vendored copy) would serve with an edge that may drop answers or
timers silently, so :func:`check_uvicorn` refuses to start, naming the
installed version and the range (``pineapple serve`` exits 1). It also
checks that the methods the edge overrides or calls still exist.

Moving the range: run ``tests/server`` (``test_protocol``, ``test_direct``,
``test_read_timeouts``, ``test_connections``, ``test_graceful_shutdown``,
``test_half_close``) on the new release, then change :data:`UVICORN_RANGE` and ``pyproject.toml``
together (``tests/server/http/test_uvicorn_range.py`` checks that they agree).
"""

from __future__ import annotations

import re

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "PROTOCOL_METHODS",
    "SERVER_METHODS",
    "UVICORN_RANGE",
    "UnsupportedUvicornError",
    "check_uvicorn",
]

UVICORN_RANGE = ((0, 55), (0, 56))
"""The uvicorn versions served on: from the first (included) to the second (excluded)."""

PROTOCOL_METHODS = (
    "connection_made",
    "connection_lost",
    "eof_received",
    "data_received",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "on_body",
    "on_message_complete",
    "on_response_complete",
    "send_400_response",
    "handle_websocket_upgrade",
    "timeout_keep_alive_handler",
    "shutdown",
    "pause_writing",
    "resume_writing",
)
"""``HttpToolsProtocol`` methods the edge overrides or relies on (``_protocol.py``'s
``OVERRIDDEN`` and ``KEPT``: ``tests/server/http/test_protocol.py`` checks they agree)."""

SERVER_METHODS = ("startup", "shutdown", "handle_exit", "on_tick", "run")
"""``uvicorn.Server`` methods ``GracefulServer`` overrides or calls."""

_LEADING = re.compile(r"(\d+)\.(\d+)")


class UnsupportedUvicornError(RuntimeError):
    """The installed uvicorn is outside :data:`UVICORN_RANGE` (or lacks a method the edge uses)."""


def _range_text() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = UVICORN_RANGE
    return f">={lo_major}.{lo_minor},<{hi_major}.{hi_minor}"


def check_uvicorn(version: str | None = None) -> None:
    """Raise :class:`UnsupportedUvicornError` unless uvicorn ``version`` (default: the
    installed one) is in :data:`UVICORN_RANGE` and has every method the edge uses."""
    found = uvicorn.__version__ if version is None else version
    match = _LEADING.match(found)
    lo, hi = UVICORN_RANGE
    if match is None or not lo <= (int(match.group(1)), int(match.group(2))) < hi:
        raise UnsupportedUvicornError(
            f"uvicorn {found} is installed, but this server's HTTP edge relies on the "
            f"internals of uvicorn {_range_text()} (pyproject.toml pins it): install "
            f"'uvicorn[standard]{_range_text()}'"
        )
    missing = [
        f"HttpToolsProtocol.{m}" for m in PROTOCOL_METHODS if not hasattr(HttpToolsProtocol, m)
    ]
    missing += [f"Server.{m}" for m in SERVER_METHODS if not hasattr(uvicorn.Server, m)]
    if missing:
        raise UnsupportedUvicornError(
            f"uvicorn {found} lacks what this server's HTTP edge uses: {', '.join(missing)}"
        )
