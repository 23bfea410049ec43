"""A staged refresh of one resource (``POST /admin/resources/{name}/refresh?stage=1``), on
real servers.

The candidate is the serving config with the resource's new value lent in place of
the live one; it shadows a share of live requests as a staged config does (the
same summary, thresholds and ``GET /config/candidate``, with ``resource`` naming
it). A json_file feed reordered shows every shadowed answer changed and is aborted
by ``max_changed_ratio`` (the live value keeps serving, the aborted data is not
swapped in by the next fetch, a changed file is); a feed whose answers are the same
is promoted at ``min_requests`` and swapped in as a refresh would; an abort by hand
closes the candidate value once; a stage of either kind excludes the other.

Both process models, with the same expectations: under ``--workers 2`` the
supervisor fetches the value and stages its files in the store unannounced (as a
value trial's), every worker maps them as its candidate, a promote names them in
the manifest (every worker maps them as any refresh) and an abort discards them. A
resource each worker fetches itself (no codec) is not staged there (409).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from .fakes import items_resource
from .pod import PLUGIN, Server, admin_cli, condition, unnamed_feed_files, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

ROWS = [{"id": f"i{n}", "score": n} for n in range(5)]
IDS = [f"i{n}" for n in range(5)]


def _config(feed: Path, **extra: Any) -> dict[str, Any]:
    """``recall_resource`` over a json_file feed (its rows in file order)."""
    meta = {"item_output": ["id", "score"]}
    entry = {"type": "json_file", "interval": -1, "params": {"path": str(feed)}}
    return {
        "_PINEAPPLE_VERSION": 1,
        "resource_config": {"feed": entry, **extra},
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_resource",
                    "resource_name": "feed",
                    "$metadata": meta,
                }
            }
        },
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": meta,
    }


def _ids(server: Server) -> list[str]:
    return [item["id"] for item in server.items()]


def _stage(server: Server, name: str, query: str) -> dict[str, Any]:
    """Stage a refresh of ``name``; its answer."""
    response = server.admin("refresh", name, f"?stage=1&{query}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["result"] == "staged" and body["candidate"]["resource"] == name, body
    return body


def test_a_reordered_feed_shows_every_answer_changed_and_is_aborted_by_threshold(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps(ROWS))
    server = serve(_config(feed))
    assert _ids(server) == IDS
    feed.write_bytes(orjson.dumps(list(reversed(ROWS))))
    staged = _stage(server, "feed", "share=1&min_requests=10&max_changed_ratio=0.5")
    assert staged["candidate"]["beside_version"] == 1
    pinned = condition(server.status(), "Pinned")  # held by the stage meanwhile
    assert pinned["status"] == "True" and "a staged refresh of 'feed'" in pinned["message"]
    refused = server.admin("refresh")  # the staged resource is held: 409 naming the stage
    assert refused.status_code == 409 and "a staged refresh of 'feed'" in refused.text
    decision = server.stage_decided(IDS)
    assert (decision["decision"], decision["by"], decision["resource"]) == (
        "abort",
        "thresholds",
        "feed",
    ), decision
    assert "changed_ratio 1 is above max_changed_ratio 0.5" in decision["reason"], decision
    summary = decision["summary"]
    n = summary["requests"]
    assert n >= 10 and summary["changed"] == n and summary["items_moved"] == 4 * n, summary
    # The decision is kept before the stage ends; the pin is lifted and the value refused
    # just after (in the process that decided it).
    wait_until(
        "the pin is lifted", lambda: condition(server.status(), "Pinned")["status"] == "False"
    )
    status = server.status()
    assert status["version"] == 1, status
    valid = condition(status, "Valid")
    assert valid["status"] == "False" and "refused by stage" in valid["message"], valid
    assert _ids(server) == IDS  # the live value serves

    again = server.admin("refresh")  # the aborted data, unchanged: not swapped in
    assert again.status_code == 422 and "refused by stage" in again.text, again.text
    feed.write_bytes(orjson.dumps(ROWS[1:]))  # a changed file: a plain refresh swaps it
    assert server.admin("refresh").json()["result"] == "swapped"
    server.items_become(ROWS[1:])
    assert condition(server.status(), "Valid")["status"] == "True"
    if server.supervised:  # the aborted value's staged files were discarded
        assert unnamed_feed_files(tmp_path / "shm") == []
    _clean(server)


def test_identical_answers_are_promoted_at_min_requests_and_the_new_value_serves(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps(ROWS))
    server = serve(_config(feed))
    assert _ids(server) == IDS
    feed.write_bytes(orjson.dumps([{**row, "note": "unread"} for row in ROWS]))  # same answers
    _stage(server, "feed", "share=1&min_requests=10&max_changed_ratio=0")
    decision = server.stage_decided(IDS)
    assert (decision["decision"], decision["by"]) == ("promote", "thresholds"), decision
    summary = decision["summary"]
    assert summary["requests"] >= 10 and summary["same"] == summary["requests"], summary
    wait_until("the promoted value serves", lambda: server.status()["version"] == 2)
    status = server.status()  # swapped as a refresh: after the decision is kept
    assert condition(status, "Pinned")["status"] == "False", status
    assert condition(status, "Valid")["status"] == "True"
    serving = 3 if server.supervised else 1  # the supervisor's publisher and each worker
    wait_until(
        "every process serves version 2",
        lambda: server.count(r"json_file/feed: swapped in version 2") == serving,
    )
    assert _ids(server) == IDS
    _clean(server)


def test_an_abort_by_hand_closes_the_candidate_value_once_and_stages_exclude_each_other(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps(ROWS))
    closes = tmp_path / "closes.log"
    config = _config(feed, cand=items_resource("cand", "c1"))
    server = serve(config, "--plugin", PLUGIN, env={"PINEAPPLE_TEST_CLOSE_LOG": str(closes)})
    same = server.admin("refresh", "feed", "?stage=1")  # the file has not changed
    assert same.status_code == 409 and "not modified: nothing to stage" in same.text, same.text
    bad = server.admin("refresh", "feed", "?stage=1&share=2")
    assert bad.status_code == 400 and "share must be between 0 and 1" in bad.text, bad.text
    unknown = server.admin("refresh", "nope", "?stage=1")
    assert unknown.status_code in (404, 409) and "'nope'" in unknown.text, unknown.text
    assert server.http.get("/config/candidate").status_code == 404  # nothing was staged
    if server.supervised:  # each worker fetches a test_items value: not staged there
        refused = server.admin("refresh", "cand", "?stage=1")
        assert refused.status_code == 409 and "not shared" in refused.text, refused.text
        _abort_by_hand(server, feed, tmp_path)
        _clean(server)
        return
    _stage(server, "cand", "share=0.5")
    view = server.http.get("/config/candidate").json()["staged"]
    assert view["resource"] == "cand" and view["share"] == 0.5, view
    for refused in (
        server.http.post("/admin/reload?stage=1"),  # a config stage while a refresh is
        server.admin("refresh", "feed", "?stage=1"),  # another staged refresh
        server.admin("refresh", "cand"),  # a plain refresh of the staged one (its pin)
        server.admin("unpin", "cand"),  # the stage's pin is the stage's to lift
        server.admin("rollback", "cand"),
    ):
        assert refused.status_code == 409, refused.text
        assert "a staged refresh of 'cand'" in refused.text or "resource 'cand'" in refused.text
    for _ in range(4):
        assert _ids(server) == IDS
    aborted = server.http.post("/admin/config/abort")
    assert aborted.status_code == 200, aborted.text
    body = aborted.json()
    assert (body["result"], body["by"], body["resource"]) == ("aborted", "admin", "cand"), body
    assert body["closed"] is True, body
    wait_until("the candidate value closed", lambda: "close cand" in _read(closes))
    assert _read(closes).count("close cand") == 1  # the candidate's; the live one serves on
    assert server.http.post("/admin/config/abort").status_code == 404  # ended once

    # A config stage excludes a staged refresh the same way (409 naming the config).
    config["_PINEAPPLE_CREATE_TIME"] = "2026-01-01T00:00:00Z/v2"
    server.config.write_bytes(orjson.dumps(config))
    assert server.http.post("/admin/reload?stage=1").status_code == 200
    refused = server.admin("refresh", "feed", "?stage=1")
    assert refused.status_code == 409 and "config " in refused.json()["error"], refused.text
    aborted = server.http.post("/admin/config/abort")  # (it shared the live cand value)
    assert aborted.status_code == 200 and aborted.json()["closed"] is True, aborted.text

    shown = admin_cli(server, "stage", "--resource", "cand", "--share", "0.5")
    assert shown.returncode == 0 and "resource cand: staged a refresh" in shown.stdout, shown
    promoted = admin_cli(server, "promote")
    assert promoted.returncode == 0 and "resource cand: refresh promoted" in promoted.stdout
    assert server.status("cand")["version"] == 2
    wait_until("the replaced live value closed", lambda: _read(closes).count("close cand") == 2)
    lines = _read(closes).splitlines()
    assert len(lines) == len(set(lines)), lines  # no value was closed twice
    _clean(server)


def test_a_reload_supersedes_a_staged_refresh_and_lifts_its_pin(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_bytes(orjson.dumps(ROWS))
    config = _config(feed)
    server = serve(config)
    feed.write_bytes(orjson.dumps(list(reversed(ROWS))))
    _stage(server, "feed", "share=1")
    config["_PINEAPPLE_CREATE_TIME"] = "2026-01-01T00:00:00Z/v2"  # the same feed entry
    replaced = server.reload(config)
    assert replaced.status_code == 200 and replaced.json()["result"] == "ok", replaced.text
    decision = server.http.get("/config/candidate").json()["last_decision"]
    assert (decision["decision"], decision["by"], decision["resource"]) == (
        "abort",
        "reload",
        "feed",
    ), decision
    wait_until(  # the new config carried the stage's pin over: lifted there too
        "the pin is lifted", lambda: condition(server.status(), "Pinned")["status"] == "False"
    )
    assert _ids(server) == IDS
    assert server.admin("refresh").json()["result"] == "swapped"  # refreshed as usual
    server.items_become(list(reversed(ROWS)))
    if server.supervised:
        wait_until("the staged files discarded", lambda: unnamed_feed_files(tmp_path / "shm") == [])
    _clean(server)


def _abort_by_hand(server: Server, feed: Path, tmp_path: Path) -> None:
    """A staged json_file refresh aborted by an admin: its staged files discarded."""
    feed.write_bytes(orjson.dumps(ROWS[:2]))
    _stage(server, "feed", "share=1")
    for refused in (
        server.http.post("/admin/reload?stage=1"),  # one stage at a time
        server.admin("unpin"),  # the stage's pin is the stage's to lift
    ):
        assert refused.status_code == 409 and "a refresh of resource 'feed'" in refused.text
    wait_until(  # every worker maps the staged value (the asked one had before it answered)
        "every worker shadows",
        lambda: server.http.get("/config/candidate").json()["staged"]["processes"] == 2,
    )
    for _ in range(4):
        assert _ids(server) == IDS
    aborted = server.http.post("/admin/config/abort")
    assert aborted.status_code == 200, aborted.text
    assert (aborted.json()["result"], aborted.json()["resource"]) == ("aborted", "feed")
    assert unnamed_feed_files(tmp_path / "shm") == []
    assert server.http.post("/admin/config/abort").status_code == 404  # ended once
    assert _ids(server) == IDS


def _clean(server: Server) -> None:
    """No process logged an error or a traceback (a candidate mapped, closed, dropped)."""
    text = server.text()
    assert "Traceback" not in text and " ERROR " not in text, text


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
