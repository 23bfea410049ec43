"""What one ``/execute`` request costs the server, without sockets: for instruction counts.

Drives uvicorn's HTTP protocol object of ``pineapple serve`` (the read-timeout
protocol, the app, the engine) in this process: fake transports feed it
``N`` keep-alive requests of the ``small_010`` fixture over ``--connections``
connections (16, as ``make bench`` loads the server), a request on each per
turn of the event loop as a loaded server reads them, and take the answers.
``--raw`` drives the raw ASGI app of ``benchmarks._bare_server`` under
uvicorn's own protocol instead. Run it
under valgrind with two counts and subtract, which leaves the requests alone
(start-up, imports and the config build cancel out)::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python -m benchmarks.request_cost --requests 2400 [--raw]

(the summary line "Collected" is the instruction count), or give
``--profile`` for cProfile's view of the Python side. Code runs some 50-100
times slower under valgrind, so the time bound on holding the answers of a
turn (``server/http/_answer_batch.py``) is stretched by ``--hold-scale`` (100):
the turns then hold what they hold in a server at full speed, where the bound
is rarely reached (``--hold-scale 1`` shows the cost when it always is).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from .serving import fixtures_dir

__all__ = ["main"]


class _Transport(asyncio.Transport):
    """Keeps what the protocol writes; counts the answers by their final newline."""

    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 40000)}.get(
            name, default
        )

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def _protocol(raw: bool, config_path: Path, payload: bytes) -> Any:
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    if raw:
        from ._bare_server import raw_app

        cfg = uvicorn.Config(raw_app(payload), lifespan="off", access_log=False, log_config=None)
        cfg.load()
        return lambda: HttpToolsProtocol(cfg, ServerState(), {})
    import server
    from server._service import Service
    from server.http._connections import Drain
    from server.http._serving import uvicorn_config

    service = Service(server.Config(config_path=config_path, watch=False, admin_token=""))
    service.start()
    ucfg = uvicorn_config(service.config, service, Drain())
    ucfg.lifespan = "off"
    ucfg.load()
    cls = ucfg.http_protocol_class
    return lambda: cls(ucfg, ServerState(), {})  # type: ignore[call-arg]


async def _drive(make: Any, request: bytes, answer: bytes, count: int, connections: int) -> None:
    """``count`` requests over ``connections`` keep-alive connections, one request each per
    round, as a loaded server's loop turn reads them; the next round when all are answered."""
    transports = [_Transport() for _ in range(connections)]
    protocols = [make() for _ in range(connections)]
    for proto, transport in zip(protocols, transports, strict=True):
        proto.connection_made(transport)
    for _ in range(count // connections):  # bounded: count
        for proto in protocols:
            proto.data_received(request)
        for _turn in range(1000):  # the apps' tasks run; bounded: a few turns a round
            if all(t.out.endswith(answer) for t in transports):
                break
            await asyncio.sleep(0)
        else:
            raise RuntimeError(f"no answer: {bytes(transports[0].out[-300:])!r}")
        for transport in transports:
            if not transport.out.startswith(b"HTTP/1.1 200 "):
                raise RuntimeError(f"not 200: {bytes(transport.out[:300])!r}")
            transport.out.clear()
    for proto in protocols:
        proto.connection_lost(None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.request_cost")
    parser.add_argument("--requests", type=int, default=960)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--hold-scale",
        type=float,
        default=100.0,
        help="stretch the answers' hold bound (server/http/_answer_batch.py) by this factor",
    )
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.connections < 1 or args.requests % args.connections:
        parser.error("--requests must be a multiple of --connections (at least 1)")
    bench = fixtures_dir() / "benchmarks"
    config = bench / "small_010_config.json"
    body = (bench / "small_010_request.json").read_bytes()
    request = (
        b"POST /execute HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    ) + body
    import uvloop

    from server.http import _answer_batch

    _answer_batch.HOLD_SECONDS *= args.hold_scale

    from pineapple import Context, builtins
    from pineapple.engine import Engine
    from pineapple.engine.http import respond

    engine = Engine(config.read_bytes(), registry=builtins.operator_registry(), stats=False)
    status, payload = respond(engine, Context(), body)  # the very bytes both answer
    engine.close()
    if status != 200:
        raise RuntimeError(f"small_010 answered {status}")
    with tempfile.TemporaryDirectory():
        loop = uvloop.new_event_loop()
        asyncio.set_event_loop(loop)
        make = _protocol(args.raw, config, payload)
        warm = 3 * args.connections
        loop.run_until_complete(_drive(make, request, payload, warm, args.connections))
        prof = cProfile.Profile() if args.profile else None
        if prof is not None:
            prof.enable()
        started = time.process_time()
        loop.run_until_complete(_drive(make, request, payload, args.requests, args.connections))
        used = time.process_time() - started
        if args.requests:
            print(f"{used / args.requests * 1e6:.1f} us of CPU per request ({args.requests})")
        if prof is not None:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        loop.close()


if __name__ == "__main__":
    main()
