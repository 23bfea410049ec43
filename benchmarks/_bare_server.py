"""The serving floor: a bare Starlette endpoint returning precomputed JSON bytes.

Served by uvicorn with the settings ``pineapple serve`` uses (``server.http._serving``:
lifespan on, no access log, no log config, uvicorn's default loop and HTTP
implementation), so the only difference from our ``/execute`` is the work
behind the endpoint. It reads the request body, as any real endpoint must.

    python -m benchmarks._bare_server --port 8081 --response-file response.json [--raw]

``--raw`` serves a raw ASGI callable instead (no Starlette: the floor of
issue 23's CPU-per-request target).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from server.http._serving import bind

__all__ = ["bare_app", "main", "raw_app"]


def bare_app(payload: bytes) -> Starlette:
    """``POST /execute`` -> ``payload``; ``GET /readyz`` -> 200."""

    async def execute(request: Request) -> Response:
        await request.body()
        return Response(payload, media_type="application/json")

    async def ready(request: Request) -> Response:
        return Response(b"{}", media_type="application/json")

    return Starlette(
        routes=[
            Route("/execute", execute, methods=["POST"]),
            Route("/readyz", ready, methods=["GET"]),
        ]
    )


def raw_app(payload: bytes) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """A raw ASGI app: any HTTP request -> ``payload`` after reading its body; lifespan ok."""
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    body = {"type": "http.response.body", "body": payload}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:  # bounded: the server's lifespan messages (startup, shutdown)
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] != "http":
            return
        more = True
        while more:  # bounded: the request body's messages
            more = (await receive()).get("more_body", False)
        await send(start)
        await send(body)

    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._bare_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response-file", required=True)
    parser.add_argument("--raw", action="store_true", help="a raw ASGI app, not Starlette")
    args = parser.parse_args(argv)
    payload = Path(args.response_file).read_bytes()
    sock = bind(f"127.0.0.1:{args.port}")  # the very socket setup of ``pineapple serve``
    server = uvicorn.Server(
        uvicorn.Config(
            raw_app(payload) if args.raw else bare_app(payload),
            lifespan="on",
            access_log=False,
            log_config=None,
            log_level="warning",
        )
    )
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
