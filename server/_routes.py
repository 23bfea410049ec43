"""Every route but ``/execute``: health, status, admin, metrics.

Every decision (reload, the admin actions) and every status (``/readyz``,
``/config``, ``/resources``) is asked of ``service.decisions``
(``server/_decisions.py``), whatever process model runs; a refusal maps to
its HTTP status there. The other handlers borrow the serving snapshot for as
long as they read from it, so a read never touches a manager that is being
torn down. Nothing
here prints a secret: statuses and descriptions are redacted by the Manager,
reload errors by the builder, and the config's content is never shown (only
its hash).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pineapple import resource
from pineapple.engine import UnknownFormatError, UnknownGroupError

from ._admin import admin_refusal
from ._dag_view import DagView
from ._decisions import ACTIONS, Action, Refused
from ._metrics import CONTENT_TYPE
from ._service import Service

__all__ = ["JSONResponse", "routes"]

Handler = Callable[[Request], Awaitable[Response]]


class JSONResponse(Response):
    """A JSON response rendered with orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def _error(code: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=code)


def _flag(request: Request, name: str) -> bool:
    """A boolean query parameter (``?force=1``)."""
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


def routes(service: Service) -> list[Route]:
    """The routes of ``service`` (``/execute`` is added by the app)."""
    metrics = service.metrics
    dag_view = DagView()

    def observed(path: str, handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            response = await handler(request)
            metrics.observe_request(
                path, request.method, response.status_code, time.perf_counter() - started
            )
            return response

        return endpoint

    def admin(path: str, handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            refusal = admin_refusal(request, service.admin_token, service.trusted_proxies)
            if refusal is not None:
                headers = {"www-authenticate": "Bearer"} if refusal.status == 401 else None
                return JSONResponse({"error": str(refusal)}, refusal.status, headers)
            return await handler(request)

        return observed(path, guarded)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    decisions = service.decisions

    async def decided(call: Callable[[], dict[str, Any]], failed: int = 200) -> Response:
        """``call()`` off the event loop; a :class:`Refused` becomes its status and body.

        ``failed``: the status of an answer whose ``result`` is ``error`` (a reload).
        """
        try:
            body = await anyio.to_thread.run_sync(call)
        except Refused as exc:
            return JSONResponse(exc.to_dict(), exc.status)
        return JSONResponse(body, failed if body.get("result") == "error" else 200)

    async def readyz(request: Request) -> Response:
        code, body = await anyio.to_thread.run_sync(decisions.readiness)
        return JSONResponse(body, code)

    async def config(request: Request) -> Response:
        return await decided(decisions.config)

    async def resources(request: Request) -> Response:
        return await decided(decisions.resources)

    async def resource_detail(request: Request) -> Response:
        name = request.path_params["name"]
        return await decided(lambda: decisions.resource(name))

    async def reload(request: Request) -> Response:
        force = _flag(request, "force")
        return await decided(lambda: decisions.reload("admin", force), failed=422)

    def acting(name: Action) -> Handler:
        async def handler(request: Request) -> Response:
            resource_name = request.path_params["name"]
            force = name == "refresh" and _flag(request, "force")
            return await decided(lambda: decisions.act(name, resource_name, force))

        return handler

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def stats(request: Request) -> Response:
        snap = service.holder.acquire()
        if snap is None:
            return _error(503, "engine not loaded")
        try:
            engine: Any = snap.engine
            body: dict[str, Any] = metrics.stats_counts()  # the pod's, with --workers
            body["resources"] = _resource_stats(snap.manager.status())
            detail = engine.operator_stats() if hasattr(engine, "operator_stats") else {}
            if detail:
                body["operator_detail"] = detail
        finally:
            snap.release()
        return JSONResponse(body)

    async def dag(request: Request) -> Response:
        query = request.query_params
        fmt = query.get("format") or "dot"
        raw = query.get("collapse") or "0"
        if not raw.isdigit() or len(raw) > 6:  # bounded: at most 999,999 levels
            return _error(400, "collapse must be a non-negative integer")
        snap = service.holder.acquire()
        if snap is None:
            return _error(503, "engine not loaded")
        try:
            render = getattr(snap.engine, "render_dag", None)
            if render is None:
                return _error(404, "this engine cannot render its DAG")
            key = (fmt, int(raw), query.get("group"))
            try:  # off the event loop, once per snapshot and key (``_dag_view``)
                text = await dag_view.text(
                    (snap.serial, id(snap.engine)),
                    key,
                    lambda: render(key[0], collapse=key[1], group=key[2]),
                )
            except UnknownGroupError as exc:
                return _error(404, str(exc))
            except UnknownFormatError as exc:
                return _error(400, str(exc))
        finally:
            snap.release()
        media = "text/vnd.graphviz" if fmt == "dot" else "text/plain"
        return Response(text, media_type=media)

    async def metrics_endpoint(request: Request) -> Response:
        return Response(await metrics.exposition(), media_type=CONTENT_TYPE)

    return [
        Route("/healthz", observed("/healthz", healthz), methods=["GET"]),
        Route("/readyz", observed("/readyz", readyz), methods=["GET"]),
        Route("/config", observed("/config", config), methods=["GET"]),
        Route("/resources", observed("/resources", resources), methods=["GET"]),
        Route(
            "/resources/{name}",
            observed("/resources/{name}", resource_detail),
            methods=["GET"],
        ),
        Route("/admin/reload", admin("/admin/reload", reload), methods=["POST"]),
        *(
            Route(
                f"/admin/resources/{{name}}/{action}",
                admin(f"/admin/resources/{{name}}/{action}", handler),
                methods=["POST"],
            )
            for action, handler in ((a, acting(a)) for a in ACTIONS)
        ),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/health", observed("/health", health), methods=["GET"]),
        Route("/stats", observed("/stats", stats), methods=["GET"]),
        Route("/dag", observed("/dag", dag), methods=["GET"]),
    ]


def _resource_stats(statuses: list[resource.ResourceStatus]) -> dict[str, Any]:
    """Per-resource counters for ``/stats`` ``resources`` (name -> version, failures, ready)."""
    return {
        st.name: {
            "type": st.type,
            "version": st.version,
            "generation": st.generation,
            "consecutive_failures": st.consecutive_failures,
            "ready": st.ready,
        }
        for st in statuses
    }
