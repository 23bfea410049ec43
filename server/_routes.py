"""Every route but ``/execute``: health, status, admin, metrics.

Each handler borrows the serving snapshot for as long as it reads from it,
so a status read never touches a manager that is being torn down. Nothing
here prints a secret: statuses and descriptions are redacted by the Manager,
reload errors by the builder, and the config's content is never shown (only
its hash).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import pineapple
from pineapple import resource
from pineapple.engine import UnknownFormatError, UnknownGroupError

from ._admin import admin_refusal
from ._build import describe_path
from ._metrics import CONTENT_TYPE
from ._service import Service
from ._supervisor_link import SupervisorRefusal

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

    async def readyz(request: Request) -> Response:
        snap = service.holder.current
        if service.draining:
            return JSONResponse({"status": "draining"}, 503)
        if snap is None:
            return JSONResponse({"status": "not loaded"}, 503)
        halted = snap.manager.halted_reason
        if halted is not None:  # values are served but will never refresh again
            return JSONResponse({"status": "refresh stopped", "reason": halted}, 503)
        return JSONResponse({"status": "ready", "snapshot": snap.serial})

    async def config(request: Request) -> Response:
        snap = service.holder.current
        reloader = service.reloader
        body: dict[str, Any] = {
            "pineapple_version": pineapple.__version__,
            "config": snap.info.to_dict() if snap is not None else None,
            # What the path is now (a FIFO or a directory is shown, never opened).
            "file": await anyio.to_thread.run_sync(describe_path, service.config.path),
            "snapshot": snap.serial if snap is not None else None,
            "in_flight": max(0, snap.refs - 1) if snap is not None else 0,
            "reload_attempts": reloader.attempts,
            "last_reload": reloader.last.to_dict() if reloader.last else None,
            "last_reload_error": reloader.last_error.to_dict() if reloader.last_error else None,
        }
        link = service.supervisor
        if link is not None:  # a worker: which accepted config generation it serves
            body["shared"] = await anyio.to_thread.run_sync(link.describe)
        return JSONResponse(body)

    async def resources(request: Request) -> Response:
        snap = service.holder.acquire()
        if snap is None:
            return _error(503, "no config is being served")
        try:
            statuses = [st.to_dict() for st in snap.manager.status()]
            memory = snap.manager.memory()
        finally:
            snap.release()
        body = {
            "snapshot": snap.serial,
            "worker": os.getpid(),
            "resources": statuses,
            "memory": memory,
        }
        return JSONResponse(body)

    async def resource_detail(request: Request) -> Response:
        name = request.path_params["name"]
        snap = service.holder.acquire()
        if snap is None:
            return _error(503, "no config is being served")
        try:
            try:
                status = snap.manager.status_of(name)
            except resource.UnknownResourceError:
                return _error(404, f"unknown resource {name!r}")
            description = await anyio.to_thread.run_sync(snap.manager.describe, name)
        finally:
            snap.release()
        body = {"status": status.to_dict(), "description": description, "worker": os.getpid()}
        return JSONResponse(body)

    async def reload(request: Request) -> Response:
        force = _flag(request, "force")
        link = service.supervisor
        if link is not None:  # a worker: the supervisor decides for every worker
            try:
                body = await anyio.to_thread.run_sync(lambda: link.reload("admin", force))
            except SupervisorRefusal as exc:
                return _error(exc.status, str(exc))
            return JSONResponse(body, 422 if body.get("result") == "error" else 200)
        outcome = await anyio.to_thread.run_sync(
            lambda: service.reloader.reload("admin", force=force)
        )
        return JSONResponse(outcome.to_dict(), 422 if outcome.result == "error" else 200)

    async def refresh(request: Request) -> Response:
        force = _flag(request, "force")
        return await resource_action(
            request,
            lambda m, name: {"result": m.refresh(name, force=force), "forced": force},
            "refresh",
            force,
        )

    async def rollback(request: Request) -> Response:
        return await resource_action(
            request,
            lambda m, name: {"result": "rolled_back", "version": m.rollback(name)},
            "rollback",
        )

    async def pin(request: Request) -> Response:
        def act(m: resource.Manager, name: str) -> dict[str, Any]:
            m.pin(name)
            return {"result": "pinned"}

        return await resource_action(request, act, "pin")

    async def unpin(request: Request) -> Response:
        return await resource_action(
            request,
            lambda m, name: {"result": "unpinned" if m.unpin(name) else "not_pinned"},
            "unpin",
        )

    async def resource_action(
        request: Request,
        act: Callable[[resource.Manager, str], dict[str, Any]],
        action: str,
        force: bool = False,
    ) -> Response:
        """Run an admin action on the serving manager (off the event loop); map its errors.

        In a worker, an action on a shared resource is the supervisor's
        (``SupervisorLink.resource_action``); this worker then serves its result.
        """
        name = request.path_params["name"]
        link = service.supervisor
        if link is not None:
            shared = link

            def act(m: resource.Manager, name: str, local: Any = act) -> dict[str, Any]:
                if shared.shares(m, name):
                    return shared.resource_action(action, name, force)
                return dict(local(m, name))

        snap = service.holder.acquire()
        if snap is None:
            return _error(503, "no config is being served")
        try:
            manager = snap.manager
            try:
                body = await anyio.to_thread.run_sync(act, manager, name)
            except SupervisorRefusal as exc:
                return _error(exc.status, str(exc), resource=_status_or_none(manager, name))
            except resource.UnknownResourceError:
                return _error(404, f"unknown resource {name!r}")
            except (resource.PinnedError, resource.NoPreviousValueError) as exc:
                return _error(409, str(exc), resource=manager.status_of(name).to_dict())
            except resource.ValidationRefusedError as exc:
                return _error(422, str(exc), resource=manager.status_of(name).to_dict())
            except resource.MemoryBudgetExceededError as exc:
                return _error(507, str(exc), resource=manager.status_of(name).to_dict())
            except resource.RefreshError as exc:
                return _error(502, str(exc), resource=manager.status_of(name).to_dict())
            except resource.ManagerStateError as exc:
                return _error(503, str(exc))
            body["status"] = manager.status_of(name).to_dict()
        finally:
            snap.release()
        return JSONResponse(body)

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
            try:
                text = render(fmt, collapse=int(raw), group=query.get("group"))
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
            for action, handler in (
                ("refresh", refresh),
                ("rollback", rollback),
                ("pin", pin),
                ("unpin", unpin),
            )
        ),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/health", observed("/health", health), methods=["GET"]),
        Route("/stats", observed("/stats", stats), methods=["GET"]),
        Route("/dag", observed("/dag", dag), methods=["GET"]),
    ]


def _status_or_none(manager: resource.Manager, name: str) -> dict[str, Any] | None:
    try:
        return manager.status_of(name).to_dict()
    except resource.UnknownResourceError:
        return None


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
