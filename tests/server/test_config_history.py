"""Config history, rollback and what produced an answer, on real ``pineapple serve``
processes in one process and with ``--workers 2`` (the ``serve`` fixture's two params),
with the same expectations: a rollback two reloads back, pinned against later edits of
the file, kept across a restart; the trace naming the config revision and each
resource's version; the request id in the answer and the access log.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .fakes import unified_config
from .pod import Server, admin_cli, condition, pipeline_config

pytestmark = pytest.mark.e2e

TRACED = b'{"common": {"_return_trace": true}, "items": []}'
PLAIN = b'{"common": {}, "items": []}'


def _tags(server: Server) -> list[str]:
    return [item["tag"] for item in server.items()]


def _history(server: Server) -> dict[str, Any]:
    answer = server.http.get("/config/history")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _revision(server: Server) -> str:
    revision: str = server.http.get("/config").json()["config"]["revision"]
    return revision


def test_a_rollback_two_reloads_back_is_pinned_against_edits_and_kept_across_a_restart(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    state = ("--state-dir", str(tmp_path / "state"))
    server = serve(unified_config("a"), *state)
    first = _revision(server)
    for tag in ("b", "c"):
        assert server.reload(unified_config(tag)).json()["result"] == "ok"
    server.items_become([{"id": "static", "tag": "c"}])
    listed = _history(server)
    assert [r["trigger"] for r in listed["revisions"]] == ["admin", "admin", "start"]
    assert listed["revisions"][2]["revision"] == first and listed["pinned"] is None
    latest = listed["revisions"][0]["revision"]

    answered = server.http.get(f"/config/diff?from={first}&to={latest}")
    diff = answered.json()
    assert diff["from"] == first and diff["to"] == latest
    assert diff["operators"]["changed"] == [
        {"name": "static", "params": {"added": [], "removed": [], "changed": ["items"]}}
    ]
    assert diff["other"]["changed"] == ["_PINEAPPLE_CREATE_TIME"]
    assert "tag" not in answered.text  # names only, never a value (the items' field)

    rolled = admin_cli(server, "config", "rollback", first[:8])
    assert rolled.returncode == 0, rolled.stderr
    assert rolled.stdout.startswith(f"config: rolled back to {first}, pinned"), rolled.stdout
    server.items_become([{"id": "static", "tag": "a"}])
    listed = _history(server)
    assert listed["pinned"] == first
    assert (listed["revisions"][0]["revision"], listed["revisions"][0]["trigger"]) == (
        first,
        "rollback",
    )

    # A later edit of the file, and a reload asked for it, do not take the pin away.
    edited = server.reload(unified_config("d"))
    assert edited.json()["result"] == "unchanged", edited.text
    assert _tags(server) == ["a"]

    server.close()  # the file holds "d"; the state directory says "a" is pinned
    again = serve(unified_config("d"), *state)
    again.items_become([{"id": "static", "tag": "a"}])
    assert _revision(again) == first and _history(again)["pinned"] == first

    unpinned = admin_cli(again, "config", "unpin", "-o", "json")
    assert unpinned.returncode == 0, unpinned.stderr
    assert json.loads(unpinned.stdout)["result"] == "unpinned"  # the server's answer itself
    again.items_become([{"id": "static", "tag": "d"}])
    assert _history(again)["pinned"] is None


def test_rollback_refusals_name_what_is_wrong(serve: Callable[..., Server], tmp_path: Path) -> None:
    server = serve(unified_config("a"), "--state-dir", str(tmp_path / "state"))
    unknown = server.http.post("/admin/config/rollback/abcdef12")
    assert unknown.status_code == 404 and "no config revision abcdef12" in unknown.json()["error"]
    malformed = server.http.post("/admin/config/rollback/zz")
    assert malformed.status_code == 400, malformed.text
    assert server.http.get("/config/diff").status_code == 400
    assert server.http.post("/admin/config/unpin").json()["result"] == "not_pinned"
    words = admin_cli(server, "config", "rollback")
    assert words.returncode == 2 and "required: REVISION" in words.stderr, words.stderr


def _feed_config(tmp_path: Path) -> dict[str, Any]:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    return pipeline_config(resource, {"type_name": "recall_resource", "resource_name": "feed"})


def test_an_answers_trace_names_the_config_revision_and_each_resources_version(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve(
        _feed_config(tmp_path), "--state-dir", str(tmp_path / "state"), "--revision-header"
    )
    revision = _revision(server)
    traced = server.http.post("/execute", content=TRACED)
    assert traced.status_code == 200, traced.text
    assert traced.json()["served_by"] == {"config_revision": revision, "resources": ["feed@1"]}
    assert [entry["name"] for entry in traced.json()["trace"]] == ["recall"]
    assert traced.headers["x-pineapple-config-revision"] == revision

    plain = server.http.post("/execute", content=PLAIN)
    assert set(plain.json()) == {"common", "items"}  # no trace asked: the answer as before

    (tmp_path / "feed.json").write_text('[{"id": 2, "score": 2.0}]')
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become([{"id": 2, "score": 2.0}])
    # A new connection may reach the other worker, which maps the new value within its
    # follow poll: wait (bounded) for an answer that served the new items, and check that
    # the same answer names the new version.
    deadline = time.monotonic() + 30
    while True:
        after = httpx.post(f"{server.url}/execute", content=TRACED, timeout=30).json()
        if after["items"] == [{"id": 2, "score": 2.0}]:
            break
        assert after["served_by"]["resources"] == ["feed@1"], after  # old items, old name
        assert time.monotonic() < deadline, after
        time.sleep(0.05)
    assert after["served_by"] == {"config_revision": revision, "resources": ["feed@2"]}


def test_the_request_id_is_echoed_and_in_the_access_log_with_what_served(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve(_feed_config(tmp_path), "--access-log", "--state-dir", str(tmp_path / "st"))
    revision = _revision(server)
    given = server.http.post("/execute", content=PLAIN, headers={"X-Request-Id": "req-7.a"})
    assert given.headers["x-request-id"] == "req-7.a"
    line = server.wait_line(r"id=req-7\.a ")
    assert line.string.rstrip().endswith(f"id=req-7.a rev={revision} resources=feed@1")

    made = server.http.get("/resources", headers={"X-Request-Id": "bad id!"}).headers
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]+", made["x-request-id"])
    assert server.wait_line(rf'"GET /resources" 200 \S+ id={made["x-request-id"]}$')


def test_a_resource_pin_is_kept_across_a_restart(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    state = ("--state-dir", str(tmp_path / "state"))
    config = _feed_config(tmp_path)
    server = serve(config, *state)
    assert server.admin("pin").status_code == 200
    server.close()
    again = serve(config, *state)
    assert condition(again.status(), "Pinned")["status"] == "True"
    assert (
        "kept across a restart (pin of version 1)" in condition(again.status(), "Pinned")["message"]
    )
    assert again.admin("unpin").json()["result"] == "unpinned"
    again.close()
    third = serve(config, *state)
    assert condition(third.status(), "Pinned")["status"] != "True"


def _rolled_back_feed(
    serve: Callable[..., Server], tmp_path: Path, *args: str
) -> tuple[Server, dict[str, Any], dict[str, Any]]:
    """A json_file feed at version 2 rolled back to version 1 (pinned), then its file edited
    to a third value; the server and the rollback's answer."""
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    entry = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    config = pipeline_config(
        {**entry, "keep_previous": True},
        {"type_name": "recall_resource", "resource_name": "feed"},
    )
    server = serve(config, "--state-dir", str(tmp_path / "state"), *args)
    feed.write_text('[{"id": 2, "score": 2.0}]')
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become([{"id": 2, "score": 2.0}])
    rolled = server.admin("rollback")
    assert rolled.status_code == 200, rolled.text
    server.items_become([{"id": 1, "score": 1.0}])
    feed.write_text('[{"id": 3, "score": 3.0}]')  # what a restart would read
    return server, config, rolled.json()


def test_a_resource_rolled_back_serves_its_kept_value_after_a_restart(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    server, config, rolled = _rolled_back_feed(serve, tmp_path)
    assert rolled["value_kept"] is True, rolled
    pins = _history(server)["resources"]
    assert pins["feed"]["action"] == "rollback" and pins["feed"]["value"]["kept"] is True
    server.close()

    again = serve(config, "--state-dir", str(tmp_path / "state"))
    assert again.items() == [{"id": 1, "score": 1.0}]  # the kept value, not the file's
    pinned = condition(again.status(), "Pinned")
    assert pinned["status"] == "True", pinned
    assert pinned["message"] == (
        "kept across a restart (rollback of version 3): the value kept in the state directory"
    )
    # Unpinned, the next refresh reads the file again.
    assert again.admin("unpin").json()["result"] == "unpinned"
    assert again.admin("refresh").json()["result"] == "swapped"
    again.items_become([{"id": 3, "score": 3.0}])
    assert list((tmp_path / "state" / "values").iterdir()) == []  # the kept value went
    assert _history(again)["resources"] == {}


def test_a_value_over_the_limit_keeps_its_pin_and_is_read_again_after_a_restart(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    limit = ("--history-max-value-bytes", "8")
    server, config, rolled = _rolled_back_feed(serve, tmp_path, *limit)
    assert rolled["value_kept"] is False, rolled
    why = "is over --history-max-value-bytes (8)"
    assert why in rolled["value_not_kept"], rolled
    assert why in _history(server)["resources"]["feed"]["value"]["why"]
    server.close()

    again = serve(config, "--state-dir", str(tmp_path / "state"), *limit)
    assert again.items() == [{"id": 3, "score": 3.0}]  # read at start: the pin holds it
    pinned = condition(again.status(), "Pinned")
    assert pinned["status"] == "True", pinned
    assert pinned["message"].startswith("kept across a restart (rollback of version 3); its ")
    assert why in pinned["message"] and pinned["message"].endswith(
        ": the value served was read at start"
    )
