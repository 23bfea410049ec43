"""The benchmark stub resource types of the public engines' ``pine_bench`` build.

The realistic benchmark configs declare a ``feed_data`` resource on a MySQL
DSN that does not exist and three ``datahub_producer`` resources (a message
queue). The stubs stand in for both without touching a network: ``feed_data``
is the same synthetic feed the ``recall_feed_data`` stub recalls (a list of
item dicts), ``datahub_producer`` a producer that drops every record (its
value is the string ``"nop"``). Every param is accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from ..._params import ParamSpec, ParamType
from ...resource import Fetcher, ResourceSchema

__all__ = ["FEED_ITEMS", "RESOURCE_STUBS", "feed_items"]

FEED_ITEMS = 3000
"""Items of the synthetic feed (the ``feed_data`` stub's value and the
``recall_feed_data`` stub's default ``bench_item_count``)."""

_IGNORED = "Accepted for config compatibility; ignored by the stub."


def feed_items(count: int = FEED_ITEMS) -> list[dict[str, Any]]:
    """The synthetic feed's first ``count`` items: id, item_id, type, score, created_at."""
    return [
        {
            "id": i + 1,
            "item_id": str(10000 + i),
            "type": i % 3 + 1,
            "score": 1000 - i,
            "created_at": "2026-01-01T00:00:00Z",
        }
        for i in range(count)
    ]


def _ignored(type_: ParamType = "string") -> ParamSpec:
    return ParamSpec(type=type_, description=_IGNORED)


def _feed_fetcher(params: dict[str, Any]) -> Fetcher:
    return lambda: feed_items()


def _nop_fetcher(params: dict[str, Any]) -> Fetcher:
    return lambda: "nop"


RESOURCE_STUBS: tuple[tuple[ResourceSchema, Any], ...] = (
    (
        ResourceSchema(
            name="feed_data",
            description=f"Benchmark stub: a synthetic feed of {FEED_ITEMS} items.",
            params={"mysql_dsn": _ignored()},
        ),
        _feed_fetcher,
    ),
    (
        ResourceSchema(
            name="datahub_producer",
            description="Benchmark stub: a DataHub producer that drops every record.",
            params={
                "ak_id": _ignored(),
                "ak_secret": _ignored(),
                "endpoint": _ignored(),
                "max_retry": _ignored("int"),
                "project": _ignored(),
                "topic": _ignored(),
                "user_agent": _ignored(),
            },
        ),
        _nop_fetcher,
    ),
)
"""Every stub resource type: (schema, fetcher factory)."""
