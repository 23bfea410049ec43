"""Every route but ``/execute``: health, status, admin, metrics.

Every decision (reload, the admin actions) and every status (``/readyz``,
``/config``, ``/resources``) is asked of ``service.decisions``
(``server/_decisions.py``), whatever process model runs; a refusal maps to
its HTTP status there. The other handlers borrow the serving snapshot for as
long as they read from it, so a read never touches a manager that is being
torn down. Nothing here prints a secret: statuses and descriptions are redacted by the Manager,
reload errors by the builder, and the config's content is never shown (only
its hash).

The pieces: ``observed`` (count and time a route), ``admin_only`` (the admin
check), ``decided`` (a decision off the event loop, a refusal as its
status, ``_decided.py``); ``Decided`` (the routes that ask ``decisions``),
``Views`` (the routes that read the snapshot or the metrics), ``Staged``
(the stage routes, ``_stage_routes.py``); ``routes`` (the table).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pineapple import resource
from pineapple.engine import UnknownFormatError, UnknownGroupError

from .._admin import admin_refusal
from .._decisions import ACTIONS, Action, Decisions, Refused
from .._engine_extras import dag_renderer, operator_stats
from .._history_decisions import HistoryDecisions
from .._service import Service
from ..metrics._metrics import CONTENT_TYPE, ServerMetrics
from ._dag_view import DagView
from ._decided import JSONResponse as JSONResponse
from ._decided import decided as decided
from ._stage_routes import Staged

__all__ = [
    "Decided",
    "JSONResponse",
    "Remembered",
    "Views",
    "admin_only",
    "decided",
    "healthz",
    "observed",
    "routes",
]

Handler = Callable[[Request], Awaitable[Response]]


def _error(code: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=code)


def _flag(request: Request, name: str) -> bool:
    """A boolean query parameter (``?force=1``)."""
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


def observed(metrics: ServerMetrics, path: str, handler: Handler) -> Handler:
    """``handler``, its requests counted and timed in ``metrics`` under ``path``."""

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        response = await handler(request)
        metrics.observe_request(
            path, request.method, response.status_code, time.perf_counter() - started
        )
        return response

    return endpoint


def admin_only(service: Service, handler: Handler) -> Handler:
    """``handler``, answered only to a caller the admin check lets in (``_admin``)."""

    async def guarded(request: Request) -> Response:
        refusal = admin_refusal(request, service.admin_token, service.trusted_proxies)
        if refusal is not None:
            headers = {"www-authenticate": "Bearer"} if refusal.status == 401 else None
            return JSONResponse({"error": str(refusal)}, refusal.status, headers)
        return await handler(request)

    return guarded


async def healthz(request: Request) -> Response:
    """Liveness: the process answers (``/healthz``, ``/health``)."""
    return JSONResponse({"status": "ok"})


class Decided:
    """The routes that ask ``decisions`` (status and admin actions), one method each."""

    def __init__(self, decisions: Decisions) -> None:
        self._decisions = decisions

    async def readyz(self, request: Request) -> Response:
        code, body = await anyio.to_thread.run_sync(self._decisions.readiness)
        return JSONResponse(body, code)

    async def resources(self, request: Request) -> Response:
        return await decided(self._decisions.resources)

    async def resource(self, request: Request) -> Response:
        name = request.path_params["name"]
        return await decided(lambda: self._decisions.resource(name))

    async def reload(self, request: Request) -> Response:
        force = _flag(request, "force")
        return await decided(lambda: self._decisions.reload("admin", force), failed=422)

    def acting(self, action: Action) -> Handler:
        """The handler of ``/admin/resources/{name}/<action>``."""

        async def handler(request: Request) -> Response:
            name = request.path_params["name"]
            force = action == "refresh" and _flag(request, "force")
            return await decided(lambda: self._decisions.act(action, name, force))

        return handler


class Remembered:
    """The config-history routes (``server/_history_decisions.py``), one method each."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def _asked(self) -> HistoryDecisions:
        history = self._service.history
        if history is None:
            raise Refused(404, "this server keeps no config history (--state-dir '' or --fleet)")
        return history

    async def history(self, request: Request) -> Response:
        return await decided(lambda: self._asked().history())

    async def diff(self, request: Request) -> Response:
        old, new = request.query_params.get("from"), request.query_params.get("to")
        if not old:
            return _error(400, "from= is required (a revision of GET /config/history)")
        return await decided(lambda: self._asked().diff(old, new or None))

    async def rollback(self, request: Request) -> Response:
        revision = request.path_params["revision"]
        return await decided(lambda: self._asked().rollback(revision))

    async def unpin(self, request: Request) -> Response:
        return await decided(lambda: self._asked().unpin())


class Views:
    """The routes that read the serving snapshot (``/stats``, ``/dag``) or the metrics.

    A handler borrows the snapshot for as long as it reads from it.
    """

    def __init__(self, service: Service) -> None:
        self._service = service
        self._metrics = service.metrics
        self._dag_view = DagView()

    async def stats(self, request: Request) -> Response:
        snap = self._service.holder.acquire()
        if snap is None:
            return _error(503, "engine not loaded")
        try:
            body: dict[str, Any] = self._metrics.stats_counts()  # the pod's, with --workers
            body["resources"] = _resource_stats(snap.manager.status())
            detail = operator_stats(snap.engine)
            if detail:
                body["operator_detail"] = detail
        finally:
            snap.release()
        return JSONResponse(body)

    async def dag(self, request: Request) -> Response:
        query = request.query_params
        fmt = query.get("format") or "dot"
        raw = query.get("collapse") or "0"
        if not raw.isdigit() or len(raw) > 6:  # bounded: at most 999,999 levels
            return _error(400, "collapse must be a non-negative integer")
        snap = self._service.holder.acquire()
        if snap is None:
            return _error(503, "engine not loaded")
        try:
            render = dag_renderer(snap.engine)
            if render is None:
                return _error(404, "this engine cannot render its DAG")
            key = (fmt, int(raw), query.get("group"))
            try:  # off the event loop, once per snapshot and key (``_dag_view``)
                text = await self._dag_view.text(
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

    async def metrics(self, request: Request) -> Response:
        return Response(await self._metrics.exposition(), media_type=CONTENT_TYPE)


def routes(service: Service) -> list[Route]:
    """The routes of ``service`` (``/execute`` is added by the app): the table, nothing else."""
    asked, views, kept = Decided(service.decisions), Views(service), Remembered(service)
    staged = Staged(service)

    def get(path: str, handler: Handler) -> Route:
        return Route(path, observed(service.metrics, path, handler), methods=["GET"])

    def admin(path: str, handler: Handler) -> Route:
        guarded = admin_only(service, handler)
        return Route(path, observed(service.metrics, path, guarded), methods=["POST"])

    return [
        get("/healthz", healthz),
        get("/readyz", asked.readyz),
        get("/config", staged.config(service.decisions.config)),
        get("/config/candidate", staged.candidate),
        get("/config/history", kept.history),
        get("/config/diff", kept.diff),
        get("/resources", asked.resources),
        get("/resources/{name}", asked.resource),
        admin("/admin/reload", staged.reload(asked.reload)),
        admin("/admin/config/promote", staged.promote),
        admin("/admin/config/abort", staged.abort),
        admin("/admin/config/rollback/{revision}", kept.rollback),
        admin("/admin/config/unpin", kept.unpin),
        *(
            admin(
                f"/admin/resources/{{name}}/{a}",
                staged.refresh(asked.acting(a))
                if a == "refresh"
                else staged.guarded(asked.acting(a)),
            )
            for a in ACTIONS
        ),
        Route("/metrics", views.metrics, methods=["GET"]),
        get("/health", healthz),
        get("/stats", views.stats),
        get("/dag", views.dag),
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
