"""The server's own ``/execute`` responder, used when the engine provides none.

``respond(engine, ctx, body) -> (status, bytes)``: 200 with the engine's
response; 400 for a body that is not a JSON object of the request shape; 422
for a flow-contract violation; 500 for an execution error. Every error body
is ``{"error": "..."}``. ``pineapple.engine.respond`` (same signature, the Go
server's bytes) replaces it whenever the engine provides it.
"""

from __future__ import annotations

from typing import Any

import orjson

from pineapple import Context, ExecutionError, PineappleError, ValidationError

__all__ = ["error_body", "respond"]


def error_body(message: str) -> bytes:
    """``{"error": message}`` as JSON bytes."""
    return orjson.dumps({"error": message})


def _bad_shape(request: Any) -> str | None:
    if not isinstance(request, dict):
        return f"request must be a JSON object, got {type(request).__name__}"
    common = request.get("common", {})
    if common is not None and not isinstance(common, dict):
        return "request field 'common' must be an object"
    items = request.get("items", [])
    if items is not None and (
        not isinstance(items, list) or not all(isinstance(i, dict) for i in items)
    ):
        return "request field 'items' must be a list of objects"
    return None


def respond(engine: Any, ctx: Context, body: bytes) -> tuple[int, bytes]:
    """Run ``body`` through ``engine`` and say what to answer (see module docs)."""
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return 400, error_body(f"malformed JSON: {exc}")
    problem = _bad_shape(request)
    if problem is not None:
        return 400, error_body(problem)
    try:
        response = engine.execute(ctx, request)
    except ValidationError as exc:
        return 422, error_body(str(exc))
    except (ExecutionError, PineappleError) as exc:
        return 500, error_body(str(exc))
    return 200, orjson.dumps(response)
