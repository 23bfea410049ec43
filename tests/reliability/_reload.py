"""Helpers of the reload/config-path/proxy reliability tests: configs, the CLI, ``/config``.

The servers are :class:`tests._serve.Serve` with ``--plugin PLUGIN``; every wait here
has a deadline.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import httpx

from tests.server.fakes import dump, items_resource, unified_config
from tests.server.pod import PLUGIN

__all__ = ["PLUGIN", "digest", "invalid", "valid", "wait_config"]


def valid(tag: str) -> bytes:
    """A valid config serving one item tagged ``tag`` (plus one from a resource)."""
    return dump(
        unified_config(tag, resources={"feed": items_resource("feed", tag)}, recall_from="feed")
    )


def invalid(tag: str) -> bytes:
    """A config that fails at step ``engine`` (an unknown operator)."""
    return dump(unified_config(tag, extra_ops={"bad": {"type_name": "no_such_operator"}}))


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wait_config(client: httpx.Client, predicate: Any, timeout: float = 15.0) -> dict[str, Any]:
    """GET /config until ``predicate(body)`` holds (polling another process, with a deadline)."""
    end = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < end:
        body = client.get("/config").json()
        if predicate(body):
            return body
        time.sleep(0.02)
    raise AssertionError(f"/config never satisfied the predicate; last: {body}")
