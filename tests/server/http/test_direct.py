"""``server/http/_direct.py`` in-process: ``/execute`` answered by the protocol, byte for
byte the app's.

Each test drives the protocol class ``pineapple serve`` runs (from
``uvicorn_config``) on a real event loop and a real :class:`Service`, with a
fake transport: which requests are answered inside ``data_received`` (no task:
the direct path) and which go to the ASGI app (a task), that both give the same
bytes, that a connection keeps its answers in order whichever path each
takes (direct answers are held to the end of the loop's turn:
``server/http/_answer_batch.py``), and that the keep-alive, drain, read-deadline, metric and
access-log rules hold on the direct path. The process-level behaviour, in one process
and with ``--workers 2``, is in ``tests/server/test_both_modes.py``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from uvicorn.server import ServerState

import server
from server._service import Service
from server.http._answer_batch import HOLD_BYTES
from server.http._connections import Drain
from server.http._serving import uvicorn_config

from ..conftest import MakeConfig, WriteConfig
from ..fakes import GATES, FakeTransport, Gate, unified_config

BODY = b'{"common": {}, "items": []}'
ANSWER_BODY = b'{"common":{},"items":[{"id":"static","tag":"a"}]}\n'


def _request(
    body: bytes = BODY, path: str = "/execute", *extra: str, version: str = "1.1"
) -> bytes:
    head = [f"POST {path} HTTP/{version}", "Host: t", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _chunked(body: bytes = BODY, path: str = "/execute", *extra: str) -> bytes:
    """The same request with a chunked body: it goes to the app."""
    lines = "".join(f"{line}\r\n" for line in extra)
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\n{lines}Transfer-Encoding: chunked\r\n\r\n"
    return head.encode() + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


class _Pod:
    """A started Service and its protocol class (no socket)."""

    def __init__(self, config: server.Config) -> None:
        self.service = Service(config)
        self.service.start()
        self.drain = Drain()
        self.ucfg = uvicorn_config(config, self.service, self.drain)
        self.ucfg.lifespan = "off"
        self.ucfg.load()
        self.state = ServerState()

    def connect(self, transport: FakeTransport | None = None) -> tuple[Any, FakeTransport]:
        protocol = self.ucfg.http_protocol_class(  # type: ignore[call-arg]
            config=self.ucfg, server_state=self.state, app_state={}
        )
        transport = transport or FakeTransport()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        return protocol, transport


@pytest.fixture
def pod(make_config: MakeConfig, write_config: WriteConfig) -> Iterator[Callable[..., _Pod]]:
    pods: list[_Pod] = []

    def start(config: dict[str, Any] | None = None, **settings: Any) -> _Pod:
        write_config(config or unified_config("a"))
        pods.append(_Pod(make_config(**settings)))
        return pods[-1]

    yield start
    for one in pods:
        one.service.stop()


def _answers(data: bytes) -> list[bytes]:
    """The final responses in ``data`` (each framed by its content-length), whole but for
    their ``x-request-id`` line (each request's own; the tests of ids read the raw bytes)."""
    data = re.sub(rb"x-request-id: [^\r]*\r\n", b"", data)
    out = []
    while data:  # bounded: each turn takes one response off data
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, data
        if head.startswith(b"HTTP/1.1 1"):  # 100 Continue: no body
            data = rest
            continue
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        out.append(head + sep + rest[:length])
        data = rest[length:]
    return out


async def _settle(protocol: Any, transport: FakeTransport, count: int) -> None:
    """Wait (bounded) until ``count`` responses are written and no app task runs."""
    for _ in range(500):
        if len(_answers(bytes(transport.written))) >= count and not protocol.tasks:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not {count} answers: {bytes(transport.written)!r}")


@pytest.mark.parametrize("revision_header", [False, True])
def test_a_small_execute_is_answered_without_a_task_at_the_turns_end_with_the_apps_bytes(
    pod: Callable[..., _Pod], revision_header: bool
) -> None:
    one = pod(revision_header=revision_header)
    rid = "X-Request-Id: req-42"  # the same id on both paths: the same bytes

    async def scenario() -> tuple[bytes, bytes]:
        protocol, transport = one.connect()
        protocol.data_received(_request(BODY, "/execute", rid))
        assert not protocol.tasks  # answered already: no ASGI task
        assert transport.written == b""  # held to the end of the loop's turn
        await asyncio.sleep(0)
        direct = bytes(transport.written)
        app_protocol, app_transport = one.connect()
        app_protocol.data_received(_chunked(BODY, "/execute", rid))
        assert len(app_protocol.tasks) == 1  # the app's path
        await _settle(app_protocol, app_transport, 1)
        for p in (protocol, app_protocol):
            p.connection_lost(None)
        return direct, bytes(app_transport.written)

    direct, via_app = asyncio.run(scenario())
    assert direct == via_app
    assert direct.startswith(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
    assert direct.endswith(b"\r\n\r\n" + ANSWER_BODY)
    assert b"connection" not in direct.lower()  # kept alive
    assert b"\r\nx-request-id: req-42\r\n" in direct
    revision = one.service.holder.current.info.revision.encode()  # type: ignore[union-attr]
    header = b"\r\nx-pineapple-config-revision: " + revision + b"\r\n"
    assert (header in direct) is revision_header


def test_a_request_without_a_valid_id_gets_one_made_on_either_path(
    pod: Callable[..., _Pod],
) -> None:
    one = pod()

    async def scenario() -> list[bytes]:
        answers = []
        for request in (
            _request(BODY, "/execute", "X-Request-Id: bad id with spaces"),
            _chunked(BODY, "/execute"),
        ):
            protocol, transport = one.connect()
            protocol.data_received(request)
            await _settle(protocol, transport, 1)
            protocol.connection_lost(None)
            answers.append(bytes(transport.written))
        return answers

    ids = [re.search(rb"\r\nx-request-id: ([^\r]*)\r\n", a) for a in asyncio.run(scenario())]
    made = [m.group(1) for m in ids if m is not None]
    assert len(made) == 2 and made[0] != made[1]
    assert all(re.fullmatch(rb"[0-9a-f]{8}-[0-9a-f]+", m) for m in made), made


@pytest.mark.parametrize(
    ("request_bytes", "direct"),
    [
        (_request(path="/execute?x=1"), True),
        (_request(path="/execute/main"), True),
        (_request(path="/execute/no_such_group"), True),  # the responder's 404
        (_request(b""), True),
        (_request(path="/exec%75te"), False),
        (_request(b"x" * (64 * 1024 + 1)), False),  # past inline_body_bytes
        (_request(BODY, "/execute", "Expect: 100-continue"), False),
        (b"GET /execute HTTP/1.1\r\nHost: t\r\n\r\n", False),
        (_request(path="/healthz"), False),
    ],
)
def test_which_requests_the_protocol_answers_itself(
    pod: Callable[..., _Pod], request_bytes: bytes, direct: bool
) -> None:
    one = pod()

    async def scenario() -> bytes:
        protocol, transport = one.connect()
        protocol.data_received(request_bytes)
        assert (not protocol.tasks) is direct
        await _settle(protocol, transport, 1)
        protocol.connection_lost(None)
        return bytes(transport.written)

    written = asyncio.run(scenario())
    assert written.startswith(b"HTTP/1.1 ")


def test_a_blocking_engine_goes_to_the_app_and_answers_keep_their_order(
    pod: Callable[..., _Pod],
) -> None:
    """A direct candidate whose engine blocks is handed to the app; the request
    pipelined behind it waits for it (no answer jumps the queue)."""
    GATES["g"] = gate = Gate()
    one = pod(unified_config("a", gate="g"))

    async def scenario() -> list[bytes]:
        protocol, transport = one.connect()
        protocol.data_received(_request() + _request(path="/execute/main"))
        assert len(protocol.tasks) == 1  # the first runs on a thread, the second is queued
        await asyncio.to_thread(gate.entered.wait, 10)
        assert transport.written == b""
        gate.go.set()
        await _settle(protocol, transport, 2)
        protocol.connection_lost(None)
        return _answers(bytes(transport.written))

    first, second = asyncio.run(scenario())
    assert first == second and first.endswith(ANSWER_BODY)


def test_pipelined_requests_are_answered_in_order_whichever_path_each_takes(
    pod: Callable[..., _Pod],
) -> None:
    one = pod()
    other = b'{"common": {}, "items": [{"id": "x"}]}'

    async def scenario() -> list[bytes]:
        protocol, transport = one.connect()
        protocol.data_received(_request() + _chunked(other) + _request())
        await _settle(protocol, transport, 3)
        protocol.connection_lost(None)
        return _answers(bytes(transport.written))

    answers = asyncio.run(scenario())
    assert len(answers) == 3
    assert answers[0] == answers[2] and answers[0].endswith(ANSWER_BODY)
    assert answers[1] != answers[0]


def test_a_body_in_many_pieces_and_a_connection_lost_mid_body(pod: Callable[..., _Pod]) -> None:
    one = pod()
    execute = one.ucfg.loaded_app.execute

    async def scenario() -> tuple[bytes, int, bool]:
        protocol, transport = one.connect()
        data = _request()
        for i in range(len(data)):
            protocol.data_received(data[i : i + 1])
        await asyncio.sleep(0)
        whole = bytes(transport.written)
        cut, cut_transport = one.connect()
        cut.data_received(data[:-5])
        cut.connection_lost(None)
        protocol.connection_lost(None)
        return whole, execute._inflight, bool(cut_transport.written)

    whole, inflight, cut_answered = asyncio.run(scenario())
    assert whole.endswith(ANSWER_BODY)
    assert inflight == 0 and not cut_answered
    snap = one.service.holder.acquire()
    assert snap is not None and snap.refs == 2  # the holder's and this one: no borrow left
    snap.release()


@pytest.mark.parametrize(
    "request_bytes",
    [
        _request(version="1.0"),
        _request(BODY, "/execute", "Connection: keep-alive", version="1.0"),  # as uvicorn
        _request(BODY, "/execute", "Connection: close"),
    ],
)
def test_a_request_that_ends_its_connection_is_answered_with_close(
    pod: Callable[..., _Pod], request_bytes: bytes
) -> None:
    _assert_answered_with_close(pod(), request_bytes)


def _assert_answered_with_close(
    one: _Pod, *pieces: bytes, between: Callable[[Any], None] | None = None
) -> None:
    """Feed ``pieces`` to a new connection (``between`` runs before the last one):
    one answer, with ``Connection: close``, and the connection closed."""

    async def scenario() -> tuple[bytes, bool]:
        protocol, transport = one.connect()
        for i, piece in enumerate(pieces):
            if between is not None and i == len(pieces) - 1:
                between(protocol)
            protocol.data_received(piece)
        protocol.connection_lost(None)
        return bytes(transport.written), transport.is_closing()

    written, closed = asyncio.run(scenario())
    assert b"\r\nconnection: close\r\n\r\n" in written and written.endswith(ANSWER_BODY)
    assert closed


def test_the_idle_time_runs_from_the_latest_answer(pod: Callable[..., _Pod]) -> None:
    """One keep-alive timer per connection: a request before it fires moves the idle end."""
    one = pod(idle_timeout_ms=200)

    async def scenario() -> tuple[bool, bool]:
        protocol, transport = one.connect()
        protocol.data_received(_request())
        await asyncio.sleep(0.15)
        protocol.data_received(_request())  # 150 ms after the first answer
        await asyncio.sleep(0.15)  # 300 ms after the first, 150 after the second
        open_then = not transport.is_closing()
        await asyncio.wait_for(transport.closed.wait(), 5)
        protocol.connection_lost(None)
        return open_then, len(_answers(bytes(transport.written))) == 2

    assert asyncio.run(scenario()) == (True, True)


def test_a_drain_during_a_direct_body_answers_it_with_close(pod: Callable[..., _Pod]) -> None:
    one = pod()

    def drain(protocol: Any) -> None:
        one.drain.connections = {protocol}
        one.drain.start()

    data = _request()
    _assert_answered_with_close(one, data[:-3], data[-3:], between=drain)


def test_a_direct_body_past_the_read_deadline_gets_408(pod: Callable[..., _Pod]) -> None:
    """Also after an answer of the app on the same connection (its cycle is still there)."""
    one = pod(read_header_timeout_ms=50, read_timeout_ms=300)

    async def scenario() -> bytes:
        protocol, transport = one.connect()
        protocol.data_received(_chunked())
        await _settle(protocol, transport, 1)
        transport.written.clear()
        protocol.data_received(_request()[:-3])
        await asyncio.wait_for(transport.closed.wait(), 5)
        protocol.connection_lost(None)
        return bytes(transport.written)

    assert asyncio.run(scenario()).startswith(b"HTTP/1.1 408 Request Timeout\r\n")


def test_direct_answers_are_counted_and_logged(
    pod: Callable[..., _Pod], caplog: pytest.LogCaptureFixture
) -> None:
    one = pod(access_log=True)

    async def scenario() -> None:
        protocol, _transport = one.connect()
        protocol.data_received(_request() + _request(path="/execute/nope?token=s3cret"))
        assert not protocol.tasks
        protocol.connection_lost(None)

    with caplog.at_level(logging.INFO, logger="pineapple.access"):
        asyncio.run(scenario())
    lines = [r.getMessage() for r in caplog.records if r.name == "pineapple.access"]
    revision = one.service.holder.current.info.revision  # type: ignore[union-attr]
    assert [re.sub(r" [0-9.]+ms id=\S+", " ms id=?", line) for line in lines] == [
        f'127.0.0.1 "POST /execute" 200 ms id=? rev={revision} resources=-',
        f'127.0.0.1 "POST /execute/nope" 404 ms id=? rev={revision} resources=-',
    ]
    text = one.service.metrics.render().decode()
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="200"} 1.0' in text
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="404"} 1.0' in text


def test_the_answers_of_one_turn_leave_together_after_its_reads(pod: Callable[..., _Pod]) -> None:
    """Three connections read in one turn: no answer is written before the last read."""
    one = pod()
    log: list[str] = []

    class _Logged(FakeTransport):
        def write(self, data: bytes | bytearray | memoryview) -> None:
            log.append("write")
            super().write(data)

    async def scenario() -> list[bytes]:
        connections = [one.connect(_Logged()) for _ in range(3)]
        for protocol, _transport in connections:
            protocol.data_received(_request())
            log.append("read")
        await asyncio.sleep(0)
        for protocol, _transport in connections:
            protocol.connection_lost(None)
        return [_answers(bytes(transport.written))[0] for _protocol, transport in connections]

    written = asyncio.run(scenario())
    assert log == ["read"] * 3 + ["write"] * 3
    assert len(set(written)) == 1 and written[0].endswith(b"\r\n\r\n" + ANSWER_BODY)


@pytest.mark.parametrize(
    ("after", "last"),
    [
        (b"NOT HTTP\r\n\r\n", b"HTTP/1.1 400 "),  # uvicorn's 400, written inside the read
        (_request(BODY, "/execute", "Connection: close"), b"HTTP/1.1 200 "),  # written at once
    ],
)
def test_a_held_answer_is_written_before_what_its_connection_writes_next(
    pod: Callable[..., _Pod], after: bytes, last: bytes
) -> None:
    one = pod()

    async def scenario() -> tuple[list[bytes], bool]:
        protocol, transport = one.connect()
        protocol.data_received(_request() + after)
        written = bytes(transport.written)  # before the turn's end: nothing waits behind
        protocol.connection_lost(None)
        return _answers(written), transport.is_closing()

    answers, closed = asyncio.run(scenario())
    assert len(answers) == 2 and closed
    assert answers[0].endswith(ANSWER_BODY) and b"connection: close" not in answers[0]
    assert answers[1].startswith(last) and b"connection: close\r\n" in answers[1]


def test_a_connection_lost_before_the_turns_end_drops_its_held_answer(
    pod: Callable[..., _Pod],
) -> None:
    one = pod()
    execute = one.ucfg.loaded_app.execute

    async def scenario() -> tuple[bytes, bytes]:
        lost, lost_transport = one.connect()
        kept, kept_transport = one.connect()
        lost.data_received(_request())
        kept.data_received(_request())
        lost.connection_lost(None)
        await asyncio.sleep(0)
        kept.connection_lost(None)
        return bytes(lost_transport.written), bytes(kept_transport.written)

    lost_written, kept_written = asyncio.run(scenario())
    assert lost_written == b"" and kept_written.endswith(ANSWER_BODY)
    assert execute._inflight == 0


def test_an_answer_past_the_hold_bytes_is_written_at_once(pod: Callable[..., _Pod]) -> None:
    big = b'{"common": {}, "items": [{"id": "%s"}]}' % (b"x" * HOLD_BYTES)
    one = pod(inline_body_bytes=2 * HOLD_BYTES)

    async def scenario() -> tuple[bytes, bytes]:
        protocol, transport = one.connect()
        small, small_transport = one.connect()
        small.data_received(_request())
        assert small_transport.written == b""  # held
        protocol.data_received(_request(big))
        written, held = bytes(transport.written), bytes(small_transport.written)
        for p in (protocol, small):
            p.connection_lost(None)
        return written, held

    written, held = asyncio.run(scenario())
    assert written.startswith(b"HTTP/1.1 200 ") and len(written) > HOLD_BYTES
    assert held.endswith(ANSWER_BODY)  # the batch was written before the big answer
