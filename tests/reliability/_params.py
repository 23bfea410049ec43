"""A ``--plugin`` for the scheduler tests: the ``test_timer_breaker`` resource type.

Its fetcher returns one item; on its second call (the first scheduled
refresh, on a refresh thread) it breaks the scheduler's heap so that the
*timer thread* dies on its next pop. Nothing a resource does can kill that
thread any more, so the test has to break it from outside to see what the
server says when it is gone.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from typing import Any

from pineapple import ParamSpec, resource
from pineapple.resource import _scheduler

__all__ = ["BrokenHeap"]

BROKEN = "the heap was broken by the test"


class BrokenHeap:
    """Stands in for the ``heapq`` module inside the scheduler: pushes work, pops raise."""

    heappush = staticmethod(heapq.heappush)

    @staticmethod
    def heappop(heap: list[Any]) -> Any:
        raise RuntimeError(BROKEN)


def _factory(params: dict[str, Any]) -> resource.Fetcher:
    calls = itertools.count(1)
    lock = threading.Lock()

    def fetch() -> list[dict[str, Any]]:
        with lock:
            if next(calls) == 2:
                setattr(_scheduler, "heapq", BrokenHeap)  # noqa: B010 (a module attribute)
        return [{"id": "a", "tag": "t"}]

    return fetch


if resource.lowlevel.default_registry().get("test_timer_breaker") is None:
    resource.register_resource(
        resource.ResourceSchema(
            name="test_timer_breaker",
            description="Test only: breaks the refresh timer on its first scheduled refresh.",
            default_interval=1,
            params={"note": ParamSpec(type="string")},
        ),
        _factory,
    )
