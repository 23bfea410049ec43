"""The stage routes: ``POST /admin/reload?stage=1`` and
``POST /admin/resources/{name}/refresh?stage=1``, promote, abort, ``GET /config/candidate``.

Each asks ``service.stages`` (``server/_stage.py``), whatever process model
runs; a server that offers no staging answers 404. A stage's settings are
query parameters (``share``, ``min_requests``, ``max_error_ratio``,
``max_changed_ratio``, ``max_p99_growth``) or the same keys in a small JSON
object body (at most ``MAX_STAGE_BODY_BYTES``); a query parameter wins.
``GET /config`` gains ``candidate`` (what ``GET /config/candidate`` answers).
While a refresh of a resource is staged, its rollback, pin and unpin answer 409.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response

from .._decisions import Refused
from .._service import Service
from .._stage import StageDecisions
from ._decided import JSONResponse, decided

__all__ = ["MAX_STAGE_BODY_BYTES", "Staged"]

MAX_STAGE_BODY_BYTES = 64 << 10
"""The largest JSON body ``POST /admin/reload?stage=1`` reads (its settings)."""

Handler = Callable[[Request], Awaitable[Response]]


class Staged:
    """The stage routes of ``service`` (see module docs), one method each."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def _asked(self) -> StageDecisions:
        stages = self._service.stages
        if stages is None:
            raise Refused(404, "this server does not stage configs")
        return stages

    def reload(self, plain: Handler) -> Handler:
        """``/admin/reload``: with ``?stage=1`` a stage, else ``plain`` (the reload)."""

        async def handler(request: Request) -> Response:
            if not _staging(request):
                return await plain(request)
            given, refusal = await _settings(request)
            if refusal is not None:
                return refusal
            return await decided(lambda: self._asked().stage(given), failed=422)

        return handler

    def refresh(self, plain: Handler) -> Handler:
        """``/admin/resources/{name}/refresh``: with ``?stage=1`` a staged refresh (its value
        shadowed, not swapped), else ``plain`` (the refresh)."""

        async def handler(request: Request) -> Response:
            if not _staging(request):
                return await plain(request)
            given, refusal = await _settings(request)
            if refusal is not None:
                return refusal
            name = request.path_params["name"]
            return await decided(lambda: self._asked().stage_resource(name, given))

        return handler

    def guarded(self, plain: Handler) -> Handler:
        """``/admin/resources/{name}/rollback|pin|unpin``: 409 while a refresh of ``name`` is
        staged (its pin holds the resource until the stage ends), else ``plain``."""

        async def handler(request: Request) -> Response:
            name = request.path_params["name"]
            stages = self._service.stages
            if stages is not None:
                body = await anyio.to_thread.run_sync(stages.candidate)
                staged = body.get("staged")
                if isinstance(staged, dict) and staged.get("resource") == name:
                    refused = f"a refresh of resource {name!r} is staged: promote or abort it first"
                    return JSONResponse({"error": refused}, 409)
            return await plain(request)

        return handler

    async def promote(self, request: Request) -> Response:
        return await decided(lambda: self._asked().promote())

    async def abort(self, request: Request) -> Response:
        return await decided(lambda: self._asked().abort())

    async def candidate(self, request: Request) -> Response:
        """The staged candidate's summary; 404 (with the last decision) when none is."""
        try:
            body = await anyio.to_thread.run_sync(lambda: self._asked().candidate())
        except Refused as exc:
            return JSONResponse(exc.to_dict(), exc.status)
        if body.get("staged") is None:
            return JSONResponse({"error": "no candidate is staged", **body}, 404)
        return JSONResponse(body)

    def config(self, plain: Callable[[], dict[str, Any]]) -> Handler:
        """``GET /config``: ``plain()`` and, when the server stages, ``candidate``."""

        def both() -> dict[str, Any]:
            body = plain()
            stages = self._service.stages
            if stages is not None:
                body["candidate"] = stages.candidate()
            return body

        async def handler(request: Request) -> Response:
            return await decided(both)

        return handler


def _staging(request: Request) -> bool:
    """Whether ``?stage=`` asks for a stage."""
    return request.query_params.get("stage", "").lower() in ("1", "true", "yes")


async def _settings(request: Request) -> tuple[dict[str, Any], Response | None]:
    """The stage's settings: a JSON object body's keys, then the query's."""
    given: dict[str, Any] = {}
    size = request.headers.get("content-length", "0")
    if not size.isdigit() or int(size) > MAX_STAGE_BODY_BYTES:
        refused = f"a stage's body is a JSON object of at most {MAX_STAGE_BODY_BYTES} bytes"
        return given, JSONResponse({"error": refused}, 413)
    if int(size):
        try:
            parsed = orjson.loads(await request.body())
        except orjson.JSONDecodeError as exc:
            return given, JSONResponse({"error": f"a stage's body is not JSON: {exc}"}, 400)
        if not isinstance(parsed, dict):
            return given, JSONResponse({"error": "a stage's body must be a JSON object"}, 400)
        given.update(parsed)
    given.update(request.query_params)
    given.pop("stage", None)
    return given, None
