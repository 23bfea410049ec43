"""Issue 37, item 4, over HTTP: a 100,000-row PostgreSQL table served by ``pineapple serve``.

In one process and with ``--workers 2`` (the supervisor loads, the workers
map its snapshot), from the ``serve`` fixture with the same expectations:
the table is recalled by its indices, an update is served after a refresh,
every value keeps the JSON form ``feed_data`` defines for its PostgreSQL
type, and the DSN's password appears in no log line, no status and no
error, even when a refresh fails. A refresh whose version query hangs
times out (``read_timeout_ms``) and its backend is gone from
``pg_stat_activity`` at once, in whichever process loaded it.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from .._postgres import Conn, gone_within, reader_role
from .pod import WAIT, Server, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

SECRET = "pw-Served-Pg-Secret-31"
ROWS = 100_000
OUTPUTS = ["id", "category", "score", "tag_ids", "updated_at", "payload", "blob"]


@pytest.fixture
def big_table(pg_conn: Conn, pg_table: str) -> str:
    pg_conn.execute(
        f'CREATE TABLE "{pg_table}" (id bigint PRIMARY KEY, category text NOT NULL, '
        "score numeric(10,3) NOT NULL, tag_ids int[], updated_at timestamptz NOT NULL, "
        "payload jsonb, blob bytea, version int NOT NULL DEFAULT 1)"
    )
    pg_conn.execute(
        f'INSERT INTO "{pg_table}" (id, category, score, tag_ids, updated_at, payload, blob) '
        "SELECT g, 'c' || (g % 100), g / 1000.0, ARRAY[g % 7, g % 11], "
        "'2026-11-30 08:15:00+00'::timestamptz + g * interval '1 second', "
        "jsonb_build_object('n', g), int4send(g::int) "
        f"FROM generate_series(1, {ROWS}) g"
    )
    return pg_table


@pytest.fixture
def dsn(pg_conn: Conn, pg_params: dict[str, Any], big_table: str) -> Iterator[str]:
    with reader_role(pg_conn, big_table, SECRET, "pgh_served") as role:
        p = pg_params
        yield f"postgresql://{role}:{SECRET}@{p['host']}:{p['port']}/{p['dbname']}"


def _config(dsn: str, table: str) -> dict[str, Any]:
    meta = {
        "common_input": ["category"],
        "common_output": [],
        "item_input": [],
        "item_output": OUTPUTS,
    }
    return {
        "resource_config": {
            "feed": {
                "type": "feed_data",
                "interval": -1,
                "params": {
                    "dsn": dsn,
                    "table": table,
                    "index_columns": ["category", "tag_ids"],
                    "order_columns": ["score"],
                    "version_query": f'SELECT MAX(version), COUNT(*) FROM "{table}"',
                },
            }
        },
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_feed_data",
                    "resource_name": "feed",
                    "match": {"category": "category"},
                    "order_by": "score",
                    "descending": True,
                    "default_size": 3,
                    "$metadata": meta,
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": meta,
    }


def _item(n: int, score: float | None = None) -> dict[str, Any]:
    """What ``/execute`` answers for row ``n`` of the table above."""
    seconds = 8 * 3600 + 15 * 60 + n
    day, rest = divmod(seconds, 86400)
    hh, rest = divmod(rest, 3600)
    mm, ss = divmod(rest, 60)
    return {
        "id": n,
        "category": f"c{n % 100}",
        "score": n / 1000.0 if score is None else score,
        "tag_ids": [n % 7, n % 11],
        "updated_at": f"2026-{11 + (30 + day > 30)}-{(30 + day - 1) % 30 + 1:02d}"
        f"T{hh:02d}:{mm:02d}:{ss:02d}Z",
        "payload": f'{{"n": {n}}}',
        "blob": base64.b64encode(n.to_bytes(4, "big")).decode(),
    }


def _recall(server: Server, category: str) -> list[dict[str, Any]]:
    # a new connection each time: with --workers 2 it may reach either worker
    body = {"common": {"category": category}, "items": []}
    response = httpx.post(f"{server.url}/execute", json=body, timeout=WAIT)
    assert response.status_code == 200, response.text
    return [{k: item[k] for k in OUTPUTS} for item in response.json()["items"]]


@pytest.mark.timeout(240)
def test_a_100k_row_table_is_served_updated_and_its_password_never_shown(
    serve: Callable[..., Server], pg_conn: Conn, dsn: str, big_table: str
) -> None:
    server = serve(_config(dsn, big_table))
    top = [_item(n) for n in (99_907, 99_807, 99_707)]
    for _ in range(4):
        assert _recall(server, "c7") == top
    status = server.status()
    assert status["size_bytes"] > 0
    described = httpx.get(f"{server.url}/resources/feed", timeout=WAIT).text
    assert f"{ROWS} rows" in described and SECRET not in described

    pg_conn.execute(f'UPDATE "{big_table}" SET score = 999.5, version = 2 WHERE id = 7')
    refreshed = server.admin("refresh")
    assert refreshed.status_code == 200, refreshed.text
    want = [_item(7, 999.5), *top[:2]]
    # With --workers 2 a new connection reaches either worker, and the one that did not
    # answer the admin maps the update within its follow poll: wait for a run of answers.
    wait_until(
        "every process serves the update",
        lambda: all(_recall(server, "c7") == want for _ in range(8)),
    )
    for _ in range(4):
        assert _recall(server, "c7") == want

    # A refresh that fails (the role may no longer log in) keeps the table and shows
    # its error without the password.
    role = dsn.split("//", 1)[1].split(":", 1)[0]
    pg_conn.execute(f'ALTER ROLE "{role}" NOLOGIN')
    pg_conn.execute(f'UPDATE "{big_table}" SET version = 3 WHERE id = 8')
    pg_conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
    )
    failed = server.admin("refresh")
    assert failed.status_code != 200
    assert SECRET not in failed.text and role in failed.text
    assert _recall(server, "c7") == want  # the last good table serves on
    for text in (
        failed.text,
        httpx.get(f"{server.url}/resources", timeout=WAIT).text,
        httpx.get(f"{server.url}/resources/feed", timeout=WAIT).text,
        httpx.get(f"{server.url}/metrics", timeout=WAIT).text,
        server.text(),
    ):
        assert SECRET not in text
    assert "not permitted to log in" in server.text()


@pytest.mark.timeout(120)
def test_a_refresh_that_times_out_ends_its_query_on_the_server(
    serve: Callable[..., Server], pg_conn: Conn, pg_dsn: str, pg_table: str
) -> None:
    marker = f"pgs_{uuid.uuid4().hex[:12]}"
    pg_conn.execute(f'CREATE TABLE "{pg_table}" (id bigint PRIMARY KEY)')
    version = (
        f'SELECT /* {marker} */ pg_sleep(CASE WHEN (SELECT COUNT(*) FROM "{pg_table}") > 0 '
        "THEN 60 ELSE 0 END)::text"
    )
    config = _config(pg_dsn, pg_table)
    config["resource_config"]["feed"]["params"] = {
        "dsn": pg_dsn,
        "table": pg_table,
        "version_query": version,
        "read_timeout_ms": 1000,
    }
    operator = config["pipeline_config"]["operators"]["recall"]
    operator.pop("match")
    operator["order_by"] = "id"
    operator["$metadata"]["item_output"] = ["id"]
    operator["$metadata"]["common_input"] = []
    server = serve(config)
    pg_conn.execute(f'INSERT INTO "{pg_table}" VALUES (1)')
    failed = server.admin("refresh")
    assert failed.status_code != 200
    assert "query timed out: no data from the server for 1s (read_timeout_ms)" in failed.text
    assert gone_within(pg_conn, marker, WAIT)  # pg_sleep(60) would hold it a minute
    assert server.items() == []  # the last good (empty) table serves on
