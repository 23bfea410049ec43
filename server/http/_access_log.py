"""The access log (``--access-log``): one line per HTTP request, once it is answered.

Each line (logger ``pineapple.access``, level INFO) says the peer, the method,
the path, the status, how long the answer took and the request's id (its
``X-Request-Id``, or one made: ``server/http/_request_id.py``); an
``/execute`` line adds the revision of the config that answered and
``name@version`` of every resource the request borrowed::

    127.0.0.1 "POST /execute" 200 1.4ms id=3f2a9c1b-1a rev=5d41402abc4b resources=feed@4,geo@1

and carries the same as fields (``client``, ``method``, ``path``, ``status``,
``duration_ms``, ``request_id``, and ``config_revision`` and ``resources`` for
``/execute``) for ``--log-format json``. The path is written without its
query string (a query may hold a token) and nothing of a body is ever read
for it. The path is the decoded one (``%0a`` is a newline): in the message
its control characters are escaped (``escape_controls``) whatever handler
writes it, so no request writes a fake line or a terminal escape; the
``path`` field holds it as decoded (a JSON line escapes it). A request that
ended before a status was sent (the client left, or the app raised) is
logged with status 0 or 500.

Without the flag the app is served unwrapped: the access log costs nothing
when it is off. ``/execute`` requests answered by the protocol itself
(``server/http/_direct.py``) log the same line through :func:`log_request`.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._log_format import escape_controls
from ._execute import Served
from ._request_id import SERVED_KEY, scope_id

__all__ = ["ACCESS_LOGGER", "AccessLog", "log_request"]

ACCESS_LOGGER = "pineapple.access"
"""The access log's logger name."""

_log = logging.getLogger(ACCESS_LOGGER)
_monotonic = time.monotonic


class AccessLog:
    """An ASGI wrapper that logs every HTTP request of ``app`` after its answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = _monotonic()
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        rid = scope_id(scope)
        try:
            await self.app(scope, receive, sending)
        except BaseException:
            status = status or 500
            raise
        finally:
            millis = (_monotonic() - started) * 1000
            served = scope.get(SERVED_KEY)
            client = scope.get("client")
            log_request(client, scope["method"], scope["path"], status, millis, rid, served)


def log_request(
    client: tuple[str, int] | None,
    method: str,
    path: str,
    status: int,
    millis: float,
    rid: str,
    served: Served = None,
) -> None:
    """The access log's line for one answered request (``path`` without its query; ``rid``
    its id; ``served``: what answered an ``/execute``)."""
    peer = client[0] if client else "-"
    fields: dict[str, object] = {
        "client": peer,
        "method": method,
        "path": path,
        "status": status,
        "duration_ms": round(millis, 3),
        "request_id": rid,
    }
    tail = ""
    if served is not None:
        revision, borrowed = served
        fields["config_revision"] = revision
        tail = f" rev={revision}"
        if borrowed is not None:
            fields["resources"] = borrowed
            tail += f" resources={','.join(borrowed) or '-'}"
    _log.info(
        '%s "%s %s" %d %.1fms id=%s%s',
        escape_controls(peer),
        escape_controls(method),
        escape_controls(path),
        status,
        millis,
        rid,  # the caller's only when it has no control character (_request_id)
        escape_controls(tail),  # resource names are the config's
        extra=fields,
    )
