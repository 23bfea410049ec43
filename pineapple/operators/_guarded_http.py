"""A pooled httpx client whose connections pass the SSRF guard and never outlive a deadline.

``guarded_client(allow_private=...)`` is an ``httpx.Client`` over an
``httpcore`` connection pool with a network backend of our own: to open a
connection it resolves the host (bounded, see ``_ssrf.resolve``), refuses
private addresses unless allowed, and connects to the first checked address
(so what was checked is what is dialled, as Go's ``ssrfSafeDialContext``).

Deadline: inside ``with call_deadline(t):`` every connect, read and write
of this thread's call waits at most until ``t`` (``time.monotonic()``): the
per-operation timeouts httpx passes down are clamped to the time left, and
past it the operation fails at once with a timeout. So a call bounded by a
budget takes at most that budget, however slowly the server drips its
answer.

Guarantees:
- The deadline is a ``ContextVar``: set by the calling thread for the length
  of one call, seen only by that thread's socket operations. A pooled
  connection serves one request at a time, so the deadline it sees is the
  one of the call using it.
- Connections are reused only between calls made through the same client
  (one per operator); ``close()`` closes every pooled connection.
"""

from __future__ import annotations

import contextlib
import ssl
import time
import typing
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar

import httpcore
import httpx

from ._ssrf import IPAddress, ResolveError, refuse_private, resolve

__all__ = ["call_deadline", "guarded_client"]

Resolver = Callable[[str, int, float], list[IPAddress]]

_deadline: ContextVar[float | None] = ContextVar("pineapple_http_deadline", default=None)
_NO_TIMEOUT_RESOLVE = 30.0
"""Resolution wait when neither a deadline nor an operation timeout bounds it."""


@contextlib.contextmanager
def call_deadline(deadline: float) -> Iterator[None]:
    """Bound every socket operation of this thread's calls by ``deadline`` (monotonic)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _clamp(timeout: float | None, kind: type[Exception], what: str) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise kind(f"{what}: the call's time budget is spent")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose reads and writes wait at most until the caller's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout, "read"))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout, "write"))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit = _clamp(timeout, httpcore.ConnectTimeout, "TLS handshake")
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, limit))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves, checks and dials (see the module docs)."""

    def __init__(self, allow_private: bool, resolver: Resolver) -> None:
        self._allow_private = allow_private
        self._resolve = resolver
        self._dial = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _clamp(timeout, httpcore.ConnectTimeout, "connect")
        started = time.monotonic()
        try:
            addresses = self._resolve(host, port, _NO_TIMEOUT_RESOLVE if limit is None else limit)
        except ResolveError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        if not self._allow_private:
            refuse_private(host, addresses)
        if limit is not None:
            limit = max(0.001, limit - (time.monotonic() - started))
        stream = self._dial.connect_tcp(
            str(addresses[0]), port, limit, local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by guarded clients")


_OTHER_HTTPCORE_ERRORS = (
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
    httpcore.ProxyError,
)


@contextlib.contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    """httpcore's exceptions as httpx's (what callers of an httpx client catch)."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise httpx.TimeoutException(str(exc) or type(exc).__name__, request=request) from exc
    except httpcore.ConnectError as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
    except httpcore.NetworkError as exc:
        raise httpx.NetworkError(str(exc) or type(exc).__name__, request=request) from exc
    except _OTHER_HTTPCORE_ERRORS as exc:
        raise httpx.TransportError(str(exc) or type(exc).__name__, request=request) from exc


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors(self._request):
            yield from self._stream

    def close(self) -> None:
        closer = getattr(self._stream, "close", None)
        if closer is not None:
            closer()


class _GuardedTransport(httpx.BaseTransport):
    def __init__(self, pool: httpcore.ConnectionPool) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors(request):
            reply = self._pool.handle_request(core)
        assert isinstance(reply.stream, Iterable)
        return httpx.Response(
            status_code=reply.status,
            headers=reply.headers,
            stream=_Body(reply.stream, request),
            extensions=reply.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def guarded_client(
    *,
    allow_private: bool,
    limits: httpx.Limits | None = None,
    resolver: Resolver = resolve,
) -> httpx.Client:
    """A pooled client whose connections pass the SSRF guard (see the module docs).

    ``resolver(host, port, timeout)`` returns the addresses to check and dial
    (tests pass a fake one); ``limits`` sizes the pool (httpx's defaults).
    """
    limits = limits or httpx.Limits()
    pool = httpcore.ConnectionPool(
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_GuardedBackend(allow_private, resolver),
    )
    return httpx.Client(transport=_GuardedTransport(pool), trust_env=False)
