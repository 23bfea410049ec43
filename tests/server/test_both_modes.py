"""The pod is one product: status, reloads, pins and the admin token answer the same
in one process and with ``--workers 2`` (the ``serve`` fixture's two params), on real
processes and real MariaDB. Reads of what is served after an action wait for it
(:meth:`Server.items_become`, :func:`items_anywhere` on new connections).
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest

from benchmarks._mariadb import rows_read, userstat_on

from .._mariadb import waiting_for_lock
from ._rawhttp import RawConnection
from .pod import (
    WAIT,
    Server,
    children,
    condition,
    feed_config,
    fill,
    pipeline_config,
    wait_until,
)

pytestmark = pytest.mark.e2e


def _same_view(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two statuses of one resource say the same (times of observation aside)."""
    keys = ("name", "version", "last_error", "consecutive_failures", "last_attempt_at")
    conditions = [[(c["type"], c["status"], c["reason"]) for c in s["conditions"]] for s in (a, b)]
    return all(a[k] == b[k] for k in keys) and conditions[0] == conditions[1]


def test_a_broken_source_shows_in_every_status_and_the_admin_answer_matches(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 10)
    server = serve(feed_config(mysql_dsn, mysql_table))
    gone = f"{mysql_table}_gone"
    with mysql_conn.cursor() as cur:
        cur.execute(f"RENAME TABLE `{mysql_table}` TO `{gone}`")
    try:
        failed = server.admin("refresh")
        assert failed.status_code == 502, failed.text
        assert "refresh of resource 'feed' failed" in failed.json()["error"]
        answered = failed.json()["resource"]
        assert mysql_table in answered["last_error"]
        assert answered["consecutive_failures"] == 1
        assert condition(answered, "Ready")["status"] == "True"  # the last good rows serve
        for _ in range(6):  # new connections: with workers, any of them answers
            assert _same_view(server.status_anywhere(), answered)
        listed = httpx.get(f"{server.url}/resources", timeout=WAIT).json()["resources"]
        assert _same_view(listed[0], answered)
        ready = httpx.get(f"{server.url}/readyz", timeout=WAIT)
        assert ready.status_code == 200, ready.text  # values serve; refreshes still run
        assert len(server.items()) == 10
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{gone}`")


def test_a_reload_that_keeps_a_version_query_entry_reads_none_of_its_table(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 10)
    version = f"{mysql_table}_v"
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{version}` (v INT)")
        cur.execute(f"INSERT INTO `{version}` VALUES (1)")
    config = feed_config(mysql_dsn, mysql_table, interval=600)
    config["resource_config"]["feed"]["params"]["version_query"] = f"SELECT v FROM `{version}`"
    try:
        with userstat_on(mysql_conn):
            before = rows_read(mysql_conn, mysql_table)
            server = serve(config)

            def reads() -> int:
                return rows_read(mysql_conn, mysql_table) - before

            def wait_for_reads(rows: int, what: str) -> None:
                # TABLE_STATISTICS can trail the reads it counts (seen once: 0 rows
                # just after the pod listened, under a loaded make test): wait, bounded,
                # for it. Seen once more never counted within the wait: say what stood.
                try:
                    wait_until(what, lambda: reads() >= rows)
                except AssertionError as missed:
                    with mysql_conn.cursor() as cur:
                        cur.execute("SELECT @@global.userstat")
                        userstat = cur.fetchone()
                    raise AssertionError(
                        f"{missed}: {reads()} rows counted, userstat {userstat}, "
                        f"feed status {server.status()}"
                    ) from None

            wait_for_reads(10, "the first full read counted")
            assert reads() == 10  # one full read, whatever the mode
            config["pipeline_config"]["operators"]["recall"]["max_size"] = 99_999
            reloaded = server.reload(config)  # the feed entry is unchanged
            assert reloaded.json()["result"] == "ok", reloaded.text
            assert server.admin("refresh").json()["result"] == "not_modified"
            assert reads() == 10  # the reload read none of it
            with mysql_conn.cursor() as cur:
                cur.execute(f"UPDATE `{version}` SET v = 2")
            assert server.admin("refresh").json()["result"] == "swapped"
            wait_for_reads(20, "the second full read counted")
            assert reads() == 20  # a new version: one read
    finally:
        with mysql_conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS `{version}`")


def _one_row_feed(tmp_path: Path) -> dict[str, Any]:
    """A config whose recall serves the one row of the ``json_file`` resource ``feed``."""
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    return pipeline_config(resource, {"type_name": "recall_resource", "resource_name": "feed"})


_PINNED = re.escape("json_file/feed: pinned (")


def test_one_pin_for_the_pod_and_a_changed_entry_drops_it(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    config = _one_row_feed(tmp_path)
    server = serve(config)
    assert server.admin("pin").status_code == 200
    second = server.admin("pin")
    assert second.status_code == 409, second.text
    assert "'feed' is pinned (pinned by an admin at" in second.json()["error"]
    assert condition(second.json()["resource"], "Pinned")["status"] == "True"
    server.wait_line(_PINNED, WAIT)  # the pin is logged
    # A reload that keeps the entry keeps the pin.
    config["pipeline_config"]["operators"]["recall"]["$metadata"]["common_output"] = []
    config["_PINEAPPLE_VERSION"] = 2
    assert server.reload(config).json()["result"] == "ok"
    assert condition(server.status_anywhere(), "Pinned")["status"] == "True"
    # A change of the entry (its interval only) is a new resource: unpinned, as documented.
    config["resource_config"]["feed"]["interval"] = 300
    assert server.reload(config).json()["result"] == "ok"
    for _ in range(4):
        status = server.status_anywhere()
        assert condition(status, "Pinned")["status"] == "False", status
    assert server.admin("pin").status_code == 200
    server.wait_line(_PINNED, WAIT, times=2)  # the second pin is logged
    assert server.count(_PINNED) == 2  # one line per pin, whatever the process model


def test_a_first_value_refused_at_start_says_that_nothing_serves(
    serve: Callable[..., Server], mysql_conn: Any, mysql_dsn: str, mysql_table: str
) -> None:
    fill(mysql_conn, mysql_table, 10)
    config = feed_config(mysql_dsn, mysql_table, validate={"max_change_ratio": 0.1, "min_rows": 50})
    with pytest.raises(AssertionError, match="serve exited before listening") as caught:
        serve(config)
    text = str(caught.value)
    assert "new value refused by min_rows: 10 rows, fewer than min_rows 50" in text
    assert "(no value is loaded yet)" in text
    assert "previous value keeps serving" not in text


def test_admin_routes_need_the_token_and_never_show_it(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    config = _one_row_feed(tmp_path)
    token = "s3cret-admin-token"
    server = serve(config, env={"PINEAPPLE_ADMIN_TOKEN": token})
    for path in ("/admin/reload", "/admin/resources/feed/pin"):
        refused = server.http.post(path)
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
    wrong = server.http.post("/admin/resources/feed/pin", headers={"authorization": "Bearer x"})
    assert wrong.status_code == 401
    allowed = {"authorization": f"Bearer {token}"}
    pinned = server.http.post("/admin/resources/feed/pin", headers=allowed)
    assert pinned.status_code == 200 and pinned.json()["result"] == "pinned"
    reloaded = server.http.post("/admin/reload", headers=allowed)
    assert reloaded.json()["result"] == "unchanged", reloaded.text
    assert token not in "".join(server.log)


def _items_anywhere(server: Server) -> list[dict[str, Any]]:
    """``/execute`` on a new connection (with workers: whichever worker accepts it)."""
    response = httpx.post(f"{server.url}/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def test_a_pin_that_lands_while_the_source_is_read_wins_everywhere(
    serve: Callable[..., Server],
    mysql_conn: Any,
    mysql_params: dict[str, Any],
    mysql_dsn: str,
    mysql_table: str,
) -> None:
    fill(mysql_conn, mysql_table, 10)
    server = serve(feed_config(mysql_dsn, mysql_table))
    want = server.items()
    fill(mysql_conn, mysql_table, 20, start=10)  # what the refresh will read
    locker = pymysql.connect(autocommit=True, **mysql_params)
    answers: list[httpx.Response] = []

    def refresh() -> None:
        answers.append(httpx.post(f"{server.url}/admin/resources/feed/refresh", timeout=WAIT))

    fetch = threading.Thread(target=refresh)
    try:
        with locker.cursor() as cur:
            cur.execute(f"LOCK TABLES `{mysql_table}` WRITE")  # the read waits for it
        fetch.start()
        wait_until("the refresh reads the table", lambda: waiting_for_lock(mysql_conn, mysql_table))
        pinned = httpx.post(f"{server.url}/admin/resources/feed/pin", timeout=WAIT)
        assert pinned.status_code == 200, pinned.text
    finally:
        with locker.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        locker.close()
        fetch.join(WAIT)
    assert not fetch.is_alive() and answers[0].status_code == 200, answers
    assert answers[0].json()["result"] == "not_modified"  # the pin won: nothing swapped
    status = server.status_anywhere()
    assert status["version"] == 1 and condition(status, "Pinned")["status"] == "True"
    if server.supervised:  # a worker started now maps what the pod serves, not the dropped read
        victim = min(p.pid for p in children(server.proc.pid) if "spawn" in " ".join(p.cmdline()))
        os.kill(victim, signal.SIGKILL)
        wait_until(
            "a replacement worker",
            lambda: (
                victim not in {p.pid for p in children(server.proc.pid)}
                and len([p for p in children(server.proc.pid) if p.is_running()]) >= 2
            ),
        )
    for _ in range(8):  # new connections: every process serves the pinned rows
        assert _items_anywhere(server) == want


def test_a_bad_reload_is_refused_once_and_the_served_config_stays(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    config = _one_row_feed(tmp_path)
    server = serve(config)
    before = server.http.get("/config").json()
    bad = dict(config, pipeline_config={"operators": {"x": {"type_name": "no_such_operator"}}})
    refused = server.reload(bad)
    assert refused.status_code == 422, refused.text
    assert (refused.json()["result"], refused.json()["step"]) == ("error", "engine")
    for _ in range(4):  # new connections: with workers, any of them answers
        body = httpx.get(f"{server.url}/config", timeout=WAIT).json()
        assert body["config"]["content_hash"] == before["config"]["content_hash"]
        assert body["last_reload"]["result"] == "error"
        assert body["last_reload_error"]["step"] == "engine"
        assert body["reload_attempts"] == before["reload_attempts"] + 1
    assert server.items() == [{"id": 1, "score": 1.0}]
    refusal = re.escape("config reload (admin)")
    server.wait_line(refusal, WAIT)  # the refusal is logged
    assert server.count(refusal) == 1  # logged once
    restored = server.reload(config)
    assert restored.json()["result"] == "unchanged", restored.text
    ready = httpx.get(f"{server.url}/readyz", timeout=WAIT)
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_execute_on_one_connection_answers_the_same_whether_the_protocol_or_the_app_takes_it(
    serve: Callable[..., Server],
) -> None:
    """Small ``/execute`` requests are answered by the protocol (``server/http/_direct.py``), a
    chunked one by the app: pipelined on one keep-alive connection, the answers come in
    order, with the same bytes but the date; then an HTTP/1.0 request ends the connection."""
    config = {
        "_PINEAPPLE_VERSION": 1,
        "pipeline_config": {
            "operators": {
                "static": {
                    "type_name": "recall_static",
                    "items": [{"id": "a"}, {"id": "b"}],
                    "$metadata": {
                        "common_input": [],
                        "common_output": [],
                        "item_input": [],
                        "item_output": ["id"],
                    },
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["static"]}},
        "flow_contract": {
            "common_input": [],
            "item_input": [],
            "common_output": [],
            "item_output": ["id"],
        },
    }
    server = serve(config, "--access-log")
    body = b'{"common": {}, "items": []}'
    direct = b"POST /execute HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )
    chunked = (
        b"POST /execute HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    host, port = server.addr.rsplit(":", 1)
    conn = RawConnection(host, int(port))
    try:
        conn.sock.sendall(direct + chunked + direct)
        answers = [conn.read() for _ in range(3)]
        conn.sock.sendall(direct.replace(b"HTTP/1.1", b"HTTP/1.0"))
        last = conn.read()
        with pytest.raises(EOFError):
            conn.read()
    finally:
        conn.close()
    expected = b'{"common":{},"items":[{"id":"a"},{"id":"b"}]}\n'
    for answer in (*answers, last):
        assert answer.status == 200 and answer.body == expected
        assert answer.headers["content-type"] == "application/json"
    ids = [a.headers["x-request-id"] for a in (*answers, last)]
    assert len(set(ids)) == 4  # each request its own (made) id, on either path
    own = ("date", "x-request-id")
    undated = [{k: v for k, v in a.headers.items() if k not in own} for a in (*answers, last)]
    assert undated[0] == undated[1] == undated[2]  # the protocol's bytes are the app's
    assert undated[3] == {**undated[0], "connection": "close"}
    server.wait_line(r'"POST /execute" 200', 10, times=4)  # each answer logged, either path
