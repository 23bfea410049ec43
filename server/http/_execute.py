"""``POST /execute``: the hot path, a bare ASGI app (no Request/Response objects).

``POST /execute`` runs the config's default pipeline group, ``POST
/execute/{group}`` a named one (404 when the config has no such group).
Per request: read the body (413 past the limit), borrow the serving snapshot,
run the responder (``pineapple.engine.respond``: parsing, 400/413/500/504
and the Go server's bytes) inline on the event loop when the engine does no
blocking I/O and the body is small (``Config.inline_body_bytes``), otherwise
on a bounded pool of worker threads, release the snapshot, send the bytes.
The context handed to the engine is built once per snapshot; per request it
only gains its deadline (``Config.request_timeout_ms`` from the request's
arrival: one clock read, shared with the latency metric).

One answer maker (``ExecuteEndpoint._make``: the responder's status and bytes,
or the 500 of a responder that raised, and what served them: the config's
revision and, with ``--access-log``, what the request borrowed) serves both
paths: this ASGI app, on the loop or on a worker thread, and the HTTP
protocol's direct answers (``server/http/_protocol.py``), which reach the
endpoint through one function, :meth:`ExecuteEndpoint.answer`, and frame its
status, bytes and headers as uvicorn frames this app's. Every answer carries
the request's ``x-request-id`` and, with ``--revision-header``, ``/execute``
answers made from a snapshot carry ``x-pineapple-config-revision``
(``server/http/_request_id.py``); both paths take them from one function
(``ExecuteEndpoint._headers``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio.to_thread
import orjson
from anyio import CapacityLimiter
from starlette.types import Message, Receive, Scope, Send

from pineapple import Context
from pineapple.engine.http import BorrowLog, with_borrow_log

from .._service import Service
from .._snapshot import Snapshot
from ._request_id import REQUEST_ID_HEADER, REVISION_HEADER, SERVED_KEY, scope_id

__all__ = ["Answer", "ExecuteEndpoint", "Served", "error_body", "is_execute_path"]

_log = logging.getLogger("pineapple.server")
_monotonic = time.monotonic

_JSON = (b"content-type", b"application/json")
_ALLOW = (b"allow", b"POST")


def error_body(message: str) -> bytes:
    """``{"error": message}`` as JSON bytes (the server's own refusals)."""
    return orjson.dumps({"error": message})


_NO_CONFIG = error_body("no config is being served")


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class _Busy(Exception):
    """Bodies in progress would pass ``Config.max_inflight_body_bytes``."""


class ExecuteEndpoint:
    """The ASGI app behind ``POST /execute``."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self._metrics = service.metrics
        self._acquire = service.holder.acquire
        self.observe = service.metrics.observe_execute
        """Count one answered ``/execute``: its status and seconds (both paths)."""
        self._respond = service.responder
        self._sample = service.request_sample
        """Where a request answered 200 is kept for the warm-up replay (None: nowhere)."""
        config = service.config
        self._limit = config.max_body_bytes
        self._threads = config.execute_threads
        timeout_ms = config.request_timeout_ms
        self._timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None
        self._inline_bytes = config.inline_body_bytes
        self._limiter: CapacityLimiter | None = None
        self._inflight_cap = config.max_inflight_body_bytes or None
        self._busy = error_body(
            f"server busy: request bodies in progress would pass {self._inflight_cap} bytes"
        )
        self._inflight = 0
        """Body bytes held by requests in progress (event loop only: no lock)."""
        self._parsed = service.parsed_bytes  # what large bodies' parses hold (threads)
        self._parsed.bodies = self._bodies
        self.revision_header = config.revision_header
        """Answer with ``x-pineapple-config-revision`` (``--revision-header``)."""
        self.log_borrows = config.access_log
        """Note what each request borrowed, for the access log (``--access-log``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The hot path is written out flat (one coroutine per request, no helper
        # awaits) because it runs on the event loop for every request.
        started = _monotonic()
        rid = scope_id(scope)
        served: Served = None
        if scope["method"] != "POST":
            refused = error_body("use POST for /execute")
            await _send(send, 405, refused, _ALLOW, *self._headers(rid, None))
            self._metrics.observe_request("/execute", scope["method"], 405, 0.0)
            return
        try:
            for key, value in scope["headers"]:
                if key == b"content-length":
                    if value.isdigit() and int(value) > self._limit:
                        raise _TooLarge
                    break
            message: Message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body: bytes = message.get("body", b"")
            if message.get("more_body", False):
                body = await self._read_rest(body, receive)  # counted as it comes
            elif len(body) > self._limit:
                raise _TooLarge
            else:
                self._hold(len(body))
        except _TooLarge:
            status, out = 413, error_body(f"request body exceeds {self._limit} bytes")
        except _Busy:
            status, out = 503, self._busy
        except _Disconnected:
            return
        else:
            try:
                path = scope["path"]
                small = len(body) <= self._inline_bytes
                made = self._answer(body, path, started, rid) if small else None
                if made is None:
                    # A large body runs off the loop even for a non-blocking engine:
                    # parsing and copying its items would stall every other request.
                    made = await self._answer_off_loop(body, path, started, rid)
            finally:
                self._inflight -= len(body)
            status, out, served = made
            if served is not None:
                scope[SERVED_KEY] = served  # for the access log
        headers = [_JSON, (b"content-length", str(len(out)).encode()), *self._headers(rid, served)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": out})
        self.observe(status, _monotonic() - started)

    @property
    def inline_bytes(self) -> int:
        """The largest body answered on the event loop (``Config.inline_body_bytes``)."""
        return self._inline_bytes

    def answer(self, body: bytes, path: str, started: float, rid: str) -> Answer | None:
        """The status, bytes and headers answering a complete ``POST`` body, made on the
        event loop now, and what served it; None when they must not be (the serving engine
        may block).

        What the HTTP protocol calls (``server/http/_protocol.py``), only for bodies of
        at most ``Config.inline_body_bytes``: on None the request goes through this ASGI
        app instead, which makes the same answer off the loop. The body is counted in
        progress while it runs. ``rid``: the request's id (``server/http/_request_id.py``).
        The headers are those this app sends after its type and length (the id, and with
        ``--revision-header`` the revision); the last part is what served the answer, for
        the access log (None: no snapshot did).
        """
        try:
            self._hold(len(body))
        except _Busy:
            return 503, self._busy, self._headers(rid, None), None
        try:
            made = self._answer(body, path, started, rid)
        finally:
            self._inflight -= len(body)
        if made is None:
            return None
        status, out, served = made
        return status, out, self._headers(rid, served), served

    def _headers(self, rid: str, served: Served) -> list[tuple[bytes, bytes]]:
        """The headers of an answer after its type and length, on both paths: the request's
        id and, with ``--revision-header``, the revision of the config that answered."""
        if served is not None and self.revision_header:
            return [(REQUEST_ID_HEADER, rid.encode()), (REVISION_HEADER, served[0].encode())]
        return [(REQUEST_ID_HEADER, rid.encode())]  # ASCII: request_id's and revisions' alphabet

    def _answer(self, body: bytes, path: str, started: float, rid: str) -> _Made | None:
        """Borrow the serving snapshot and make the answer on the loop (None: it blocks)."""
        snap = self._acquire()
        if snap is None:
            return 503, _NO_CONFIG, None
        try:
            if snap.blocking:
                return None
            return self._make(snap, body, path, started, rid)
        finally:
            snap.release()

    async def _answer_off_loop(self, body: bytes, path: str, started: float, rid: str) -> _Made:
        """Borrow the serving snapshot and make the answer on the bounded worker-thread pool."""
        snap = self._acquire()
        if snap is None:
            return 503, _NO_CONFIG, None
        try:
            limiter = self._limiter
            if limiter is None:
                limiter = self._limiter = CapacityLimiter(self._threads)
            made: _Made = await anyio.to_thread.run_sync(
                self._make, snap, body, path, started, rid, limiter=limiter
            )
            return made
        finally:
            snap.release()

    def _make(self, snap: Snapshot, body: bytes, path: str, started: float, rid: str) -> _Made:
        """The one answer maker of both paths: the responder's status and bytes, or the 500
        of a responder that raised (logged with ``rid``), and what served it. Any thread: it
        reads only the borrowed snapshot."""
        log = None
        try:
            args, log = _args(snap, body, path, started, self._timeout, self.log_borrows)
            status, out = self._respond(*args)
        except Exception as exc:
            status, out = _failed(snap, exc, rid)
        else:
            sample = self._sample  # only what the serving config answers, at most one a ms
            if status == 200 and sample is not None and started >= sample.next_at:
                sample.record(body, _group(path), started)
        return status, out, (snap.info.revision, None if log is None else log.borrowed())

    def _hold(self, size: int) -> None:
        """Count ``size`` more body bytes in progress; ``_Busy`` when that would pass the cap
        (with the parsed objects of large bodies, ``server/_parse_budget.py``)."""
        cap = self._inflight_cap
        if cap is not None and self._inflight + self._parsed.held + size > cap:
            raise _Busy
        self._inflight += size

    def _bodies(self) -> int:
        return self._inflight

    async def _read_rest(self, first: bytes, receive: Receive) -> bytes:
        """The rest of a body sent in several messages (413 past the limit)."""
        chunks = [first]
        size = len(first)
        self._hold(size)
        try:
            # Bounded: the body's size by _limit, the total in progress by _inflight_cap,
            # the time by the server's read timeout (server.http._read_timeouts).
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    raise _Disconnected
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self._limit:
                    raise _TooLarge
                self._hold(len(chunk))
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        except BaseException:
            self._inflight -= sum(map(len, chunks))  # what _hold counted: no leak on any exit
            raise


def _args(
    snap: Snapshot, body: bytes, path: str, started: float, timeout: float | None, log: bool
) -> tuple[tuple[Any, ...], BorrowLog | None]:
    """The responder's arguments (the engine, the context with its deadline, the body, the
    group) and, with ``log``, the log of what the request borrows."""
    ctx: Context | None = snap.context
    if timeout is not None:
        ctx = snap.context.with_deadline(started + timeout)
    borrowed = None
    if log:
        ctx, borrowed = with_borrow_log(ctx)
    group = _group(path)
    args = (snap.engine, ctx, body) if group is None else (snap.engine, ctx, body, group)
    return args, borrowed


Served = tuple[str, list[str] | None] | None
"""What served an answer: the config's revision and, when noted, ``name@version`` of what it
borrowed."""

_Made = tuple[int, bytes, Served]
"""What the answer maker makes: the status, the bytes and what served them."""

Answer = tuple[int, bytes, list[tuple[bytes, bytes]], Served]
""":meth:`ExecuteEndpoint.answer`: the status, the bytes, the headers after the type and
length, and what served them."""


def _failed(snap: Snapshot, exc: Exception, rid: str) -> tuple[int, bytes]:
    """The 500 of a responder that raised (logged with its traceback and the request's id)."""
    _log.error(
        "/execute failed unexpectedly (snapshot %d, config revision %s, request %s)",
        snap.serial,
        snap.info.revision,
        rid,
        exc_info=exc,
        extra={"request_id": rid, "config_revision": snap.info.revision},
    )
    return 500, error_body(f"internal error: {type(exc).__name__}")


def _group(path: str) -> str | None:
    """``/execute`` -> None (the default group); ``/execute/{group}`` -> the group."""
    if not path.startswith("/execute/"):
        return None
    return path[len("/execute/") :] or None


def is_execute_path(path: str) -> bool:
    """True for ``/execute`` and ``/execute/{group}``."""
    return path == "/execute" or path.startswith("/execute/")


async def _send(send: Send, status: int, body: bytes, *extra: tuple[bytes, bytes]) -> None:
    headers = [_JSON, (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
