"""The serving floor: a bare Starlette endpoint returning precomputed JSON bytes.

Served by uvicorn with the settings ``pineapple serve`` uses (``server._serving``:
lifespan on, no access log, no log config, uvicorn's default loop and HTTP
implementation), so the only difference from our ``/execute`` is the work
behind the endpoint. It reads the request body, as any real endpoint must.

    python -m benchmarks._bare_server --port 8081 --response-file response.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server._serving import bind

__all__ = ["bare_app", "main"]


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._bare_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response-file", required=True)
    args = parser.parse_args(argv)
    sock = bind(f"127.0.0.1:{args.port}")  # the very socket setup of ``pineapple serve``
    server = uvicorn.Server(
        uvicorn.Config(
            bare_app(Path(args.response_file).read_bytes()),
            lifespan="on",
            access_log=False,
            log_config=None,
            log_level="warning",
        )
    )
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
