"""``server/http/_read_timeouts.py`` in-process (as the edge's protocol runs it): what it
relies on in uvicorn, and when it answers 408.

The first test fails loudly when uvicorn changes an internal the protocol uses
(uvicorn is not pinned). The others drive the protocol on a real event loop
with a fake transport: a pipelined request cut while the previous response is
under way, and a request whose response already started, are closed without a
408; a complete request leaves no timer behind. The process-level behaviour is
in ``tests/reliability/test_read_timeouts.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.server import ServerState

from server.http._connections import ConnectionRules, Drain
from server.http._protocol import EdgeProtocol, edge_protocol
from server.http._read_timeouts import ReadDeadline, ReadTimeouts, TimeoutKind

from ..fakes import FakeTransport

OK = b"HTTP/1.1 200 OK\r\n"


def test_uvicorn_internals_the_protocol_relies_on() -> None:
    assert AutoHTTPProtocol is httptools_impl.HttpToolsProtocol  # pinning keeps the parser
    assert httptools_impl.STATUS_LINE[408] == b"HTTP/1.1 408 Request Timeout\r\n"
    for name in ("on_message_begin", "on_headers_complete", "on_message_complete"):
        assert callable(getattr(httptools_impl.HttpToolsProtocol, name)), name
    init = inspect.getsource(httptools_impl.HttpToolsProtocol.__init__)
    for attr in ("self.loop", "self.cycle", "self.pipeline", "self.server_state", "self.client"):
        assert f"{attr} =" in init or f"{attr}: " in init, attr
    cycle = inspect.getsource(httptools_impl.RequestResponseCycle.__init__)
    for attr in ("self.response_started", "self.response_complete"):
        assert f"{attr} =" in cycle, attr
    assert ServerState().default_headers == []


def test_both_timeouts_at_zero_arm_no_timer() -> None:
    async def scenario() -> tuple[object, object]:
        loop = asyncio.get_running_loop()
        off = ReadDeadline(ReadTimeouts(0, 0), loop, lambda kind: None)
        on = ReadDeadline(ReadTimeouts(1.0, 0), loop, lambda kind: None)
        for deadline in (off, on):
            deadline.start()
            deadline.begin()
        timers = off.timer, on.timer
        on.cancel()
        return timers

    off, on = asyncio.run(scenario())
    assert off is None and on is not None
    bound = edge_protocol(ReadTimeouts(1.0, 0), ConnectionRules(), Drain())
    assert issubclass(bound, EdgeProtocol)
    assert bound.limits == ReadTimeouts(1.0, 0)


@pytest.mark.parametrize(
    ("header", "read", "first"),
    [(10, 30, 10), (0, 30, 30), (40, 30, 30), (10, 0, 10), (0, 0, float("inf"))],
)
def test_the_first_deadline_is_the_nearer_enabled_one(header: int, read: int, first: float) -> None:
    assert ReadTimeouts(header, read).first_seconds == first


async def _respond(send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    """An app answering 200 at once (without reading a body)."""
    await _respond(send)


def _connect(app: Any, timeouts: ReadTimeouts) -> tuple[EdgeProtocol, FakeTransport]:
    config = uvicorn.Config(app, lifespan="off", log_config=None, server_header=False)
    cls = edge_protocol(timeouts, ConnectionRules(), Drain())
    protocol = cls(config=config, server_state=ServerState(), app_state={})
    assert isinstance(protocol, EdgeProtocol)
    transport = FakeTransport()
    transport.set_protocol(protocol)
    protocol.connection_made(transport)
    return protocol, transport


async def _finish(protocol: EdgeProtocol) -> None:
    protocol.connection_lost(None)
    await asyncio.gather(*protocol.tasks)


@pytest.mark.timeout(30)
def test_a_pipelined_request_is_cut_without_408_while_a_response_is_under_way() -> None:
    seen: list[TimeoutKind] = []

    async def scenario() -> bytes:
        gate = asyncio.Event()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await gate.wait()
            await _respond(send)

        protocol, transport = _connect(app, ReadTimeouts(0.05, 5.0, seen.append))
        protocol.data_received(b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHo")
        await asyncio.wait_for(transport.closed.wait(), 10)
        gate.set()
        await _finish(protocol)
        return bytes(transport.written)

    assert asyncio.run(scenario()) == b""  # no 408 in front of /a's response
    assert seen == ["header"]


@pytest.mark.timeout(30)
def test_a_started_response_is_closed_without_408() -> None:
    seen: list[TimeoutKind] = []

    async def scenario() -> bytes:
        protocol, transport = _connect(_answer, ReadTimeouts(0.05, 0.1, seen.append))
        protocol.data_received(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab")
        await asyncio.wait_for(transport.closed.wait(), 10)
        await _finish(protocol)
        return bytes(transport.written)

    written = asyncio.run(scenario())
    assert written.startswith(OK) and b"408" not in written
    assert seen == ["read"]


@pytest.mark.timeout(30)
def test_keep_alive_requests_share_one_timer() -> None:
    async def scenario() -> None:
        protocol, transport = _connect(_answer, ReadTimeouts(5.0, 10.0))
        timer = protocol._reads.timer
        assert timer is not None  # armed at accept
        for _ in range(3):
            protocol.data_received(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            assert protocol._reads.started is None  # complete: no deadline runs
            await asyncio.gather(*protocol.tasks)
        protocol.data_received(b"GET / HTTP/1.1\r\n")
        assert protocol._reads.started is not None
        assert protocol._reads.timer is timer  # no timer operation per request
        assert not transport.closed.is_set()
        await _finish(protocol)
        assert timer.cancelled()  # with the connection

    asyncio.run(scenario())


async def _cut_after(protocol: EdgeProtocol, transport: FakeTransport, data: bytes) -> float:
    """Send ``data``; seconds until the protocol closes the connection."""
    started = protocol.loop.time()
    protocol.data_received(data)
    await asyncio.wait_for(transport.closed.wait(), 10)
    return protocol.loop.time() - started


@pytest.mark.timeout(30)
def test_a_timer_armed_for_an_earlier_request_re_arms_for_the_current_one() -> None:
    async def scenario() -> float:
        protocol, transport = _connect(_answer, ReadTimeouts(0.3, 0))
        protocol.data_received(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")  # at accept + 0
        await asyncio.sleep(0.15)  # the accept's header deadline is 0.15 s away
        cut = await _cut_after(protocol, transport, b"GET / HTTP/1.1\r\n")
        await _finish(protocol)
        return cut

    assert asyncio.run(scenario()) >= 0.3 - 0.01  # this request's deadline, not the first's


@pytest.mark.timeout(30)
def test_a_request_after_a_slow_body_gets_its_own_header_deadline() -> None:
    async def scenario() -> float:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            while (await receive()).get("more_body"):
                pass
            await _respond(send)

        protocol, transport = _connect(app, ReadTimeouts(0.1, 5.0))
        protocol.data_received(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\na")
        await asyncio.sleep(0.2)  # past the header deadline: the timer moved to the read one
        protocol.data_received(b"b")
        await asyncio.gather(*protocol.tasks)
        cut = await _cut_after(protocol, transport, b"GET / HTTP/1.1\r\n")
        await _finish(protocol)
        return cut

    assert asyncio.run(scenario()) < 2.0  # 0.1 s, not the first request's read deadline


def test_config_reaches_uvicorn() -> None:
    from server import Config
    from server._service import Service
    from server.http._serving import uvicorn_config as _uvicorn_config

    config = Config("unused.json", idle_timeout_ms=1500, max_connections=7)
    settings = _uvicorn_config(config, Service(config), Drain())
    assert settings.timeout_keep_alive == 1.5
    assert settings.limit_concurrency == 8  # uvicorn counts the asking connection
    bound = settings.http
    assert isinstance(bound, type) and issubclass(bound, EdgeProtocol)
    assert (bound.limits.header_seconds, bound.limits.read_seconds) == (10.0, 30.0)
    assert bound.connection_rules.write_seconds == 30.0
    off = Config(
        "unused.json",
        read_header_timeout_ms=0,
        read_timeout_ms=0,
        max_connections=0,
        write_timeout_ms=0,
    )
    settings = _uvicorn_config(off, Service(off), Drain())
    bound = settings.http
    assert isinstance(bound, type) and issubclass(bound, EdgeProtocol)  # drain: always
    assert not bound.limits.enabled and bound.connection_rules.write_seconds == 0
    assert settings.limit_concurrency is None
