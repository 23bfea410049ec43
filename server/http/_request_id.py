"""Request ids: the caller's ``X-Request-Id``, or one made here; and the revision header.

Every request gets an id: the ``X-Request-Id`` it carries when that is 1 to
:data:`MAX_REQUEST_ID_BYTES` characters of ``A-Z a-z 0-9 - _ . : / + = @``
(anything else is not echoed: a header is written back as bytes), else one
made here: this process's prefix (random, 8 hex digits) and a counter, as
``3f2a9c1b-1a``. The id is echoed in the answer's ``x-request-id`` header,
written in the access log line (``id=``) and in the log line of an
``/execute`` that failed (500).

With ``--revision-header``, ``/execute`` answers carry
``x-pineapple-config-revision``: the revision of the config that answered
(``GET /config/history`` names revisions the same way).

Both paths write them: the ASGI app (``/execute`` itself, :func:`echoing`
around every other route) and the protocol's direct answers
(``server/http/_direct.py``).
"""

from __future__ import annotations

import itertools
import os
import re

from starlette.types import Message, Scope, Send

__all__ = [
    "MAX_REQUEST_ID_BYTES",
    "REQUEST_ID_HEADER",
    "REVISION_HEADER",
    "SCOPE_KEY",
    "SERVED_KEY",
    "echoing",
    "made_id",
    "request_id",
    "scope_id",
]

REQUEST_ID_HEADER = b"x-request-id"
REVISION_HEADER = b"x-pineapple-config-revision"
MAX_REQUEST_ID_BYTES = 128
SCOPE_KEY = "pineapple.request_id"
"""Where the ASGI scope holds the request's id (for the endpoint's and the log's lines)."""
SERVED_KEY = "pineapple.served"
"""Where ``/execute`` leaves what served it (``revision resources``) for the access log."""

_VALID = re.compile(rb"[A-Za-z0-9\-_.:/+=@]{1,%d}" % MAX_REQUEST_ID_BYTES)
_PREFIX = os.urandom(4).hex()
_COUNTER = itertools.count(1)


def made_id() -> str:
    """A new id of this process (prefix and counter)."""
    return f"{_PREFIX}-{next(_COUNTER):x}"


def request_id(given: bytes | None) -> str:
    """``given`` when it is a valid id (see module docs), else a made one."""
    if given is not None and _VALID.fullmatch(given):
        return given.decode("ascii")
    return f"{_PREFIX}-{next(_COUNTER):x}"  # made_id's, inline: once per answer


def scope_id(scope: Scope) -> str:
    """The id of the request of ``scope`` (made now when :class:`RequestIds` did not run)."""
    rid = scope.get(SCOPE_KEY)
    if isinstance(rid, str):
        return rid
    rid = request_id(_header(scope))
    scope[SCOPE_KEY] = rid
    return rid


def _header(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:  # bounded: the headers the parser took
        if name == REQUEST_ID_HEADER:
            return bytes(value)
    return None


def echoing(scope: Scope, send: Send) -> Send:
    """``send``, adding the request's id to the answer's headers."""
    echoed = (REQUEST_ID_HEADER, scope_id(scope).encode("ascii"))

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), echoed]}
        await send(message)

    return sending
