"""``create_app``: the Starlette application around a :class:`Service`.

The lifespan starts the service unless it is already started (``run`` starts
it before binding the port, so a bad config never listens) and stops it on
shutdown, after uvicorn has let in-flight requests finish.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._config import Config
from .._service import Service
from ._direct import DirectRoute
from ._execute import ExecuteEndpoint, is_execute_path
from ._request_id import echoing
from ._routes import JSONResponse, routes

__all__ = ["create_app", "direct_route"]


class _App(Starlette):
    """Starlette, with ``/execute`` dispatched before the middleware stack.

    The hot path answers its own errors (JSON bodies, 500 on an unexpected
    exception), so it skips Starlette's per-request middleware and routing,
    unless the user added middleware (``app.add_middleware``): then every
    request, ``/execute`` included, goes through it and the router.
    """

    execute: ExecuteEndpoint
    answer_execute: ASGIApp
    """``execute``, or it in a request span when tracing (``server/_tracing.py``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
        elif not is_execute_path(scope["path"]):
            await super().__call__(scope, receive, echoing(scope, send))
        elif not self.user_middleware:
            await self.answer_execute(scope, receive, send)  # which echoes the request's id itself
        else:
            await super().__call__(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, exc.status_code, exc.headers)


def create_app(config: Config | Service) -> Starlette:
    """The ASGI app serving ``config`` (or an existing service); ``app.state.service``.

    >>> from starlette.testclient import TestClient      # doctest: +SKIP
    >>> with TestClient(create_app(Config("c.json"))) as client:  # doctest: +SKIP
    ...     client.get("/readyz").json()["status"]
    'ready'
    """
    service = config if isinstance(config, Service) else Service(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not service.started:
            await anyio.to_thread.run_sync(service.start)
        flushing = asyncio.create_task(service.metrics.keep_flushing())
        try:
            yield
        finally:
            flushing.cancel()
            with contextlib.suppress(OSError, TimeoutError):
                service.metrics.flush()  # the last counts (every request has ended)
            await anyio.to_thread.run_sync(service.stop)

    execute = ExecuteEndpoint(service)
    tracing = service.tracing
    answer: ASGIApp = execute if tracing is None else tracing.execute_app(execute)
    app = _App(
        routes=[
            # Reached only through user middleware (see _App).
            Route("/execute", answer),
            Route("/execute/{group}", answer),
            *routes(service),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.execute = execute
    app.answer_execute = answer
    app.state.service = service
    return app


def direct_route(app: Starlette, access_log: bool) -> DirectRoute | None:
    """How connections answer ``/execute`` of ``app`` themselves (``server/http/_direct.py``);
    None for an app that is not :func:`create_app`'s, or that traces (a request span needs
    the ASGI path)."""
    if not isinstance(app, _App) or app.answer_execute is not app.execute:
        return None
    return DirectRoute(app.execute, app, access_log=access_log)
