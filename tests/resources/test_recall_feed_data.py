from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import resources
from pineapple import ExecutionError
from pineapple.engine import Engine, OperatorInput, OperatorOutput, build_operator
from pineapple.resource import Manager, Static, with_resources

NAMES = ["id", "category", "tag_ids", "score", "title"]
ROWS = [
    (1, "news", "[10, 20]", 0.5, "a"),
    (2, "sport", "20,30", 0.9, "b"),
    (3, "news", "[30]", 0.7, "c"),
    (4, "news", "[20]", 0.1, "d"),
]


@pytest.fixture
def table() -> resources.FeedTable:
    return resources.lowlevel.build_feed_table(NAMES, [ROWS], "id", ["category", "tag_ids"])


def _run(
    table: Any, params: dict[str, Any], common: dict[str, Any], output: list[str]
) -> list[dict[str, Any]]:
    op, _ = build_operator(
        "recall_feed_data",
        {"resource_name": "feed", **params},
        {"common_input": list(common), "item_output": output},
    )
    out = OperatorOutput()
    op.execute(with_resources(None, Static({"feed": table})), OperatorInput(common, []), out)
    return out.added_items or []


def test_match_order_page_and_output_columns(table: resources.FeedTable) -> None:
    params = {
        "match": {"category": "cat", "tag_ids": "tags"},
        "order_by": "score",
        "descending": True,
    }
    common = {"cat": "news", "tags": [20, 30], "page": 0, "size": 2}
    assert _run(table, params, common, ["item_id", "score"]) == [
        {"item_id": 3, "score": 0.7},
        {"item_id": 1, "score": 0.5},
    ]
    common["page"] = 1
    assert _run(table, params, common, ["id"]) == [{"id": 4}]


def test_absent_common_value_drops_the_condition(table: resources.FeedTable) -> None:
    params = {"match": {"category": "cat"}}
    assert [r["id"] for r in _run(table, params, {}, ["id"])] == [1, 2, 3, 4]
    assert [r["id"] for r in _run(table, params, {"cat": "sport"}, ["id"])] == [2]


def test_size_defaults_and_is_capped(table: resources.FeedTable) -> None:
    assert len(_run(table, {"default_size": 3}, {}, ["id"])) == 3
    assert len(_run(table, {"max_size": 1}, {"size": 50}, ["id"])) == 1


def test_wrong_value_or_unindexed_column_fails_naming_the_operator() -> None:
    with pytest.raises(TypeError, match='recall_feed_data: resource "feed" is list'):
        _run([{"id": 1}], {}, {}, ["id"])


def _feed_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE items ({', '.join(NAMES)})")
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    conn.commit()
    conn.close()


def test_engine_recalls_from_a_managed_feed_data(tmp_path: Path) -> None:
    db = tmp_path / "feed.sqlite"
    _feed_db(db)
    config = {
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "params": {
                    "sqlite_path": str(db),
                    "table": "items",
                    "index_columns": ["category", "tag_ids"],
                    "order_columns": ["score"],
                },
            }
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "match": {"category": "cat"},
                    "order_by": "score",
                    "descending": True,
                    "common_defaults": {"page": 0, "size": 10},
                    "$metadata": {
                        "common_input": ["cat", "page", "size"],
                        "common_output": [],
                        "item_input": [],
                        "item_output": ["item_id", "score"],
                    },
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": ["cat"],
            "item_input": [],
            "common_output": [],
            "item_output": ["item_id", "score"],
        },
    }
    rm = Manager()
    rm.load_from_root_config(config)
    rm.start()
    engine = Engine(config)
    try:
        ctx = with_resources(None, rm)
        response = engine.execute(ctx, {"common": {"cat": "news"}, "items": []})
        assert response["items"] == [
            {"item_id": 3, "score": 0.7},
            {"item_id": 1, "score": 0.5},
            {"item_id": 4, "score": 0.1},
        ]
        with pytest.raises(ExecutionError, match="recall"):
            engine.execute(with_resources(None, Static({})), {"common": {"cat": "x"}, "items": []})
    finally:
        engine.close()
        rm.stop()
