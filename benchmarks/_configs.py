"""Config files the server benchmarks serve: a ``feed_data`` table and a small pipeline."""

from __future__ import annotations

from typing import Any

from ._mariadb import feed_params

__all__ = ["feed_config", "request_body"]


def _meta(
    common_input: list[str] | None = None, item_output: list[str] | None = None
) -> dict[str, list[str]]:
    return {
        "common_input": common_input or [],
        "common_output": [],
        "item_input": [],
        "item_output": item_output or [],
    }


def feed_config(table: str, *, top_n: int = 20, interval: float = 3600) -> dict[str, Any]:
    """Recall a page of one category by score from ``feed``, drop offline, keep ``top_n``.

    Only ``top_n`` distinguishes two variants, so a change of it touches
    ``pipeline_config`` only (the ``feed`` entry is carried over by a reload).
    """
    return {
        "_PINEAPPLE_VERSION": "0.1.0",
        "pipeline_config": {
            "operators": {
                "recall_feed": {
                    "type_name": "recall_feed_data",
                    "$metadata": _meta(["category"], ["item_id", "score", "status"]),
                    "resource_name": "feed",
                    "match": {"category": "category"},
                    "order_by": "score",
                    "descending": True,
                    "default_size": 100,
                },
                "drop_offline": {
                    "type_name": "filter_condition",
                    "$metadata": {**_meta(), "item_input": ["status"]},
                    "value": "offline",
                },
                "keep_top": {
                    "type_name": "filter_truncate",
                    "$metadata": _meta(),
                    "top_n": top_n,
                },
            },
            "pipeline_map": {},
        },
        "pipeline_group": {"main": {"pipeline": ["recall_feed", "drop_offline", "keep_top"]}},
        "flow_contract": {
            "common_input": ["category"],
            "item_input": [],
            "common_output": [],
            "item_output": ["item_id", "score"],
        },
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "interval": interval,
                # as production: the rank recall orders by is built at load, not per request
                "params": feed_params(table, order_columns=["score"]),
            }
        },
    }


def request_body(category: str = "tech") -> bytes:
    """An ``/execute`` body for :func:`feed_config`."""
    return b'{"common": {"category": "%s"}, "items": []}' % category.encode()
