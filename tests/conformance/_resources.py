"""Resources for a fixture: a static provider, or a real Manager loaded from ``resource_config``."""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pineapple import Context, resource

_log = logging.getLogger(__name__)


def redis_addr() -> str:
    """The address that replaces ``PLACEHOLDER`` in ``requires: ["redis"]`` fixtures."""
    return os.environ.get("PINEAPPLE_REDIS_ADDR", "127.0.0.1:6379")


def with_placeholder(config: dict[str, Any], addr: str) -> dict[str, Any]:
    """A copy of ``config`` with every ``"PLACEHOLDER"`` string replaced by ``addr``."""

    def walk(value: Any) -> Any:
        if value == "PLACEHOLDER":
            return addr
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    result: dict[str, Any] = walk(copy.deepcopy(config))
    return result


@contextmanager
def fixture_context(data: dict[str, Any], config: dict[str, Any]) -> Iterator[tuple[Context, Any]]:
    """``(ctx, provider)`` for a fixture; a Manager is stopped afterwards.

    A Manager whose first fetch fails is kept: the resources that did not load
    are simply absent. ``redis_connection`` connects lazily, as the public
    engines' clients do, so ``requires: ["redis-unavailable"]`` fixtures load it
    as written and see its commands fail.
    """
    static = data.get("static_resources")
    if static is not None:
        provider = resource.Static(static)
        yield resource.with_resources(Context(), provider), provider
        return
    manager = resource.Manager()
    try:
        manager.load_from_root_config(config)
        try:
            manager.start()
        except resource.StartError as exc:
            if "redis-unavailable" not in (data.get("requires") or []):
                pytest.fail(f"resources did not start: {exc}")
            _log.info("expected start failure: %s", exc)
        yield resource.with_resources(Context(), manager), manager
    finally:
        manager.stop()
