"""How a route answers: JSON rendered with orjson, and a decision asked off the event loop.

Shared by the route table (``_routes.py``) and the stage routes
(``_stage_routes.py``), which the table includes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
import orjson
from starlette.responses import Response

from .._decisions import Refused

__all__ = ["JSONResponse", "decided"]


class JSONResponse(Response):
    """A JSON response rendered with orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


async def decided(call: Callable[[], dict[str, Any]], failed: int = 200) -> Response:
    """``call()`` off the event loop; a :class:`Refused` becomes its status and body.

    ``failed``: the status of an answer whose ``result`` is ``error`` (a reload).
    """
    try:
        body = await anyio.to_thread.run_sync(call)
    except Refused as exc:
        return JSONResponse(exc.to_dict(), exc.status)
    return JSONResponse(body, failed if body.get("result") == "error" else 200)
