"""Issue 21, items 6 and 7 over HTTP: real ``pineapple serve`` processes and real MariaDB.

Item 6: ``/execute`` answers carry every MariaDB column type as the JSON
value ``feed_data`` defines (base64 bytes, ``TIME`` text, zero dates null),
the same in one process and with ``--workers 2`` (where workers read the
mapped snapshot). Item 7: ``--resource-memory-budget-bytes`` refuses the
adversarial table (odd rows 100 KB) that a sampled size let through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .._serve import Serve
from ..resources._mysql_types import COLUMNS, create_types_table, expected_rows
from ..resources.test_feed_data_size import fill_adversarial
from .pod import Server, serve_plugin
from .workers.test_shared_workers import serving_two_workers

pytestmark = [pytest.mark.e2e, pytest.mark.mysql]

OUTPUTS = ["id", *(column[0] for column in COLUMNS)]


ARROW_UNREAD = (
    "GEOMETRY",
    "POINT",
    "TIME",
    "TIME(3)",
    "DATE",
    "DATETIME",
    "TIMESTAMP NULL DEFAULT NULL",
)
"""Columns the ``arrow`` loader's reader (connectorx) refuses in this table (zero dates, a
negative TIME, geometry): ``tests/resources/test_feed_arrow.py`` names them."""


def _config(dsn: str, table: str, loader: str = "process") -> dict[str, Any]:
    params: dict[str, Any] = {"mysql_dsn": dsn, "table": table, "order_columns": ["id"]}
    outputs = OUTPUTS
    if loader == "arrow":
        outputs = ["id", *(c[0] for c in COLUMNS if c[1] not in ARROW_UNREAD)]
        names = ", ".join(f"`{c}`" for c in outputs)
        params = {**params, "table": None, "query": f"SELECT {names} FROM `{table}`"}
        params = {k: v for k, v in params.items() if v is not None} | {"loader": "arrow"}
    return {
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "interval": -1,
                "params": params,
            }
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "order_by": "id",
                    "$metadata": {
                        "common_input": [],
                        "common_output": [],
                        "item_input": [],
                        "item_output": outputs,
                    },
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": outputs,
        },
    }


@pytest.fixture(
    params=[
        ("one process", "process"),
        ("--workers 2", "process"),
        ("one process", "arrow"),
        ("--workers 2", "arrow"),
    ],
    ids=lambda p: f"{p[0]}, loader {p[1]}",
)
def served_types(
    request: pytest.FixtureRequest,
    mysql_conn: Any,
    mysql_dsn: str,
    mysql_table: str,
    tmp_path: Path,
) -> Iterator[Serve]:
    create_types_table(mysql_conn, mysql_table)
    config = tmp_path / "pineapple.json"
    mode, loader = request.param
    config.write_text(json.dumps(_config(mysql_dsn, mysql_table, loader)))
    request.node.outputs = _config(mysql_dsn, mysql_table, loader)["flow_contract"]["item_output"]
    if mode == "one process":
        server = serve_plugin(config, tmp_path / "closes.log")
        try:
            yield server
        finally:
            server.close()
    else:
        with serving_two_workers(config, tmp_path) as (server, _):
            yield server


@pytest.mark.timeout(180)
def test_execute_answers_every_column_type_as_its_json_value(
    served_types: Serve, mysql_conn: Any, mysql_table: str, request: pytest.FixtureRequest
) -> None:
    outputs: list[str] = request.node.outputs  # the arrow loader's: the columns it reads
    want = [{name: row[name] for name in outputs} for row in expected_rows(mysql_conn, mysql_table)]
    with httpx.Client(base_url=served_types.url, timeout=30) as http:
        for _ in range(4):  # with --workers 2, new connections reach either worker
            response = http.post("/execute", content=b'{"common": {}, "items": []}')
            assert response.status_code == 200, response.text
            items = response.json()["items"]
            assert [{name: item[name] for name in outputs} for item in items] == want
            http.close()
            http = httpx.Client(base_url=served_types.url, timeout=30)
        http.close()


@pytest.mark.timeout(180)
def test_the_memory_budget_refuses_the_table_whose_odd_rows_are_large(
    mysql_conn: Any, mysql_dsn: str, mysql_table: str, tmp_path: Path
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id INT PRIMARY KEY, score DOUBLE, pad LONGTEXT)"
        )
        cur.execute(f"INSERT INTO `{mysql_table}` VALUES (100000, 1, 'small')")
    budget = 50_000_000  # the table below holds about twice this in its odd rows alone
    config = _config(mysql_dsn, mysql_table)
    config["pipeline_config"]["operators"]["recall"]["$metadata"]["item_output"] = ["id"]
    config["flow_contract"]["item_output"] = ["id"]
    path = tmp_path / "pineapple.json"
    path.write_text(json.dumps(config))
    server = Server(path, "--resource-memory-budget-bytes", str(budget))
    try:
        size = server.status()["size_bytes"]
        assert 0 < size < 10_000
        fill_adversarial(mysql_conn, mysql_table)
        refused = server.admin("refresh")
        assert refused.status_code == 507, refused.text
        error = refused.json()["error"]
        assert "memory_budget" in error and f"over the budget of {budget} bytes" in error
        listing = server.http.get("/resources").json()
        assert listing["memory"]["in_use_bytes"] == size  # the one-row table still serves
        assert len(server.items()) == 1
    finally:
        server.close()
