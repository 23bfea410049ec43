"""Stage, then promote: a staged candidate shadows live requests, against real servers.

In both process models (the ``serve`` fixture), with the same expectations: a
candidate whose sort order is reversed shows every shadowed answer changed
(each of its five items but the middle one moved) and is aborted by
``max_changed_ratio``; a candidate with the same answers is promoted at
``min_requests`` (the history names the trigger ``promote``); promote and
abort by hand, an abort closing the candidate's resources; the live answers
never change while a candidate is staged; a full shadow queue drops requests
and counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from .fakes import items_resource
from .pod import PLUGIN, Server, admin_cli, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

ITEMS = 5
ASC = [f"i{n}" for n in range(ITEMS)]


def _config(order: str, tag: str = "v1", **extra: Any) -> dict[str, Any]:
    """Five static items sorted by ``score`` in ``order``; ``tag`` only changes the bytes."""
    operators: dict[str, Any] = {
        "static": {
            "type_name": "recall_static",
            "items": [{"id": f"i{n}", "score": n} for n in range(ITEMS)],
            "$metadata": {"item_output": ["id", "score"]},
        },
        "sort": {
            "type_name": "reorder_sort",
            "order": order,
            "$metadata": {"item_input": ["score"]},
        },
    }
    pipeline = ["static", "sort"]
    for name, op in extra.pop("ops", {}).items():
        operators[name] = op
        pipeline.append(name)
    return {
        "_PINEAPPLE_VERSION": 1,
        "_PINEAPPLE_CREATE_TIME": f"2026-01-01T00:00:00Z/{tag}",
        "pipeline_config": {"operators": operators},
        "pipeline_group": {"main": {"pipeline": pipeline}},
        "flow_contract": {"item_output": ["id", "score"]},
        **extra,
    }


def _ids(server: Server) -> list[str]:
    response = server.http.post("/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def _stage(server: Server, config: dict[str, Any], query: str) -> dict[str, Any]:
    server.config.write_bytes(orjson.dumps(config))
    response = server.http.post(f"/admin/reload?stage=1&{query}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["result"] == "staged", body
    return body


def test_a_reversed_sort_shows_every_answer_changed_and_is_aborted_by_threshold(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config("asc"))
    staged = _stage(server, _config("desc"), "share=1&min_requests=20&max_changed_ratio=0.5")
    assert staged["candidate"]["share"] == 1.0
    assert staged["candidate"]["thresholds"]["min_requests"] == 20
    decision = server.stage_decided(ASC)
    assert decision["decision"] == "abort" and decision["by"] == "thresholds", decision
    assert "changed_ratio 1 is above max_changed_ratio 0.5" in decision["reason"], decision
    summary = decision["summary"]
    n = summary["requests"]
    assert n >= 20 and summary["changed"] == n and summary["changed_ratio"] == 1.0, summary
    assert summary["errors"] == 0 and summary["same"] == 0, summary
    assert summary["items_moved"] == 4 * n, summary  # reversed: all but the middle item
    assert summary["items_added"] == summary["items_removed"] == 0, summary
    example = summary["examples"][0]
    assert example["moved"] == 4 and example["ids"]["moved"] == ["i0", "i1", "i3", "i4"]
    config = server.http.get("/config").json()
    assert config["candidate"]["staged"] is None
    assert config["candidate"]["last_decision"]["decision"] == "abort"
    assert _ids(server) == ASC  # still the live config
    metrics = server.http.get("/metrics").text
    assert 'pineapple_shadow_requests_total{outcome="changed"}' in metrics


def test_identical_answers_are_promoted_at_min_requests(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve(_config("asc"), "--state-dir", str(tmp_path / "state"))
    staged = _stage(
        server,
        _config("asc", tag="v2"),
        "share=1&min_requests=10&max_changed_ratio=0&max_error_ratio=0",
    )
    revision = staged["candidate"]["revision"]
    decision = server.stage_decided(ASC)
    assert decision["decision"] == "promote" and decision["by"] == "thresholds", decision
    summary = decision["summary"]
    assert summary["requests"] >= 10 and summary["same"] == summary["requests"], summary
    assert summary["changed"] == summary["errors"] == 0, summary
    wait_until(
        "the promoted config serves",
        lambda: server.http.get("/config").json()["config"]["revision"] == revision,
    )

    def recorded() -> bool:  # the history records it just after the swap
        newest = server.http.get("/config/history").json()["revisions"][0]
        return bool(newest["revision"] == revision and newest["trigger"] == "promote")

    wait_until("the history records the promote", recorded)


def test_promote_and_abort_by_hand_and_an_abort_closes_the_candidates_resources(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    closes = tmp_path / "closes.log"
    server = serve(
        _config("asc"), "--plugin", PLUGIN, env={"PINEAPPLE_TEST_CLOSE_LOG": str(closes)}
    )
    assert server.http.get("/config/candidate").status_code == 404
    assert server.http.post("/admin/config/promote").status_code == 404
    assert server.http.post("/admin/config/abort").status_code == 404
    candidate = _config("desc", resource_config={"cand": items_resource("cand", "c1")})
    _stage(server, candidate, "share=0.5")
    again = server.http.post("/admin/reload?stage=1")
    assert again.status_code == 409, again.text  # one candidate at a time
    view = server.http.get("/config/candidate").json()["staged"]
    assert view["share"] == 0.5 and view["thresholds"]["min_requests"] is None
    shadowing = 2 if server.supervised else 1
    wait_until(  # every worker built the candidate (the asked one had before it answered)
        "every process shadows",
        lambda: server.http.get("/config/candidate").json()["staged"]["processes"] == shadowing,
    )
    aborted = server.http.post("/admin/config/abort")
    assert aborted.status_code == 200, aborted.text
    assert aborted.json()["result"] == "aborted" and aborted.json()["by"] == "admin"
    # Every process that built the candidate closes its value once: the one process, or
    # each of the two workers and the supervisor's trial process.
    builds = shadowing + 1 if server.supervised else 1
    wait_until(
        f"the candidate's {builds} values closed",
        lambda: _read(closes).count("close cand") == builds,
    )
    assert _ids(server) == ASC

    result = admin_cli(server, "stage", "--share", "0.5")
    assert result.returncode == 0, result.stderr
    shown = admin_cli(server, "candidate", "-o", "json")
    assert shown.returncode == 0 and '"staged"' in shown.stdout, shown.stderr
    promoted = admin_cli(server, "promote")
    assert promoted.returncode == 0, promoted.stderr
    server.items_become([{"id": f"i{n}", "score": n} for n in reversed(range(ITEMS))])
    lines = _read(closes).splitlines()
    assert len(lines) == len(set(lines)), lines  # no value was closed twice
    if not server.supervised:  # the promoted candidate itself serves: its value stays open
        assert len(lines) == builds


def test_a_full_shadow_queue_drops_and_counts(serve: Callable[..., Server], tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    server = serve(
        _config("asc"), "--plugin", PLUGIN, "--shadow-queue", "1", "--replay-seconds", "0"
    )
    held = {"gate": {"type_name": "test_file_gate", "folder": str(gate)}}
    _stage(server, _config("asc", tag="v2", ops=held), "share=1")
    assert _ids(server) == ASC  # the shadow's thread takes it and waits in the gate
    wait_until("the shadow entered the gate", (gate / "entered").exists)  # the queue is empty
    for _ in range(5):  # (one connection: one process) one waits in the queue, four are dropped
        assert _ids(server) == ASC
    (gate / "go").touch()

    def counted() -> bool:
        summary = server.http.get("/config/candidate").json()["staged"]["summary"]
        assert summary["dropped"] <= 4 and summary["requests"] <= 2, summary
        return bool(summary["dropped"] == 4 and summary["requests"] == 2)

    wait_until("four dropped and the two taken compared", counted)
    metrics = server.http.get("/metrics").text
    assert 'pineapple_shadow_requests_total{outcome="dropped"} 4.0' in metrics


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_a_reload_supersedes_the_stage_and_the_lifetime_ends_one(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config("asc"), "--shadow-max-seconds", "1")
    _stage(server, _config("desc"), "share=1")
    replaced = server.reload(_config("asc", tag="v3"))  # a plain reload while staged
    assert replaced.status_code == 200 and replaced.json()["result"] == "ok", replaced.text
    decision = server.http.get("/config/candidate").json()["last_decision"]
    assert (decision["decision"], decision["by"]) == ("abort", "reload"), decision
    assert decision["reason"].startswith("superseded by a reload (admin)"), decision

    _stage(server, _config("desc", tag="v4"), "share=1")
    wait_until(
        "the stage's lifetime ended it",
        lambda: server.http.get("/config/candidate").status_code == 404,
    )
    decision = server.http.get("/config/candidate").json()["last_decision"]
    assert (decision["decision"], decision["by"]) == ("abort", "lifetime"), decision
    assert _ids(server) == ASC


def test_a_bad_stage_is_refused_and_the_serving_config_stays(
    serve: Callable[..., Server],
) -> None:
    server = serve(_config("asc"))
    server.config.write_bytes(orjson.dumps(_config("sideways")))
    bad = server.http.post("/admin/reload?stage=1&share=0.5")
    assert bad.status_code == 422 and bad.json()["result"] == "error", bad.text
    assert "sideways" in bad.json()["error"], bad.text
    server.config.write_bytes(orjson.dumps(_config("desc")))
    for query, named in (
        ("share=2", "share must be between 0 and 1"),
        ("min_requests=x", "min_requests must be a number"),
        ("max_changed_ratio=-1", "max_changed_ratio must be at least 0"),
    ):
        refused = server.http.post(f"/admin/reload?stage=1&{query}")
        assert refused.status_code == 400 and named in refused.json()["error"], refused.text
    unchanged = server.http.post("/admin/reload?stage=1", content=b"[1]")
    assert unchanged.status_code == 400, unchanged.text  # a body must be a JSON object
    server.config.write_bytes(orjson.dumps(_config("asc")))
    same = server.http.post("/admin/reload?stage=1")
    assert same.status_code == 409 and "serves already" in same.json()["error"], same.text
    assert server.http.get("/config/candidate").status_code == 404
    assert _ids(server) == ASC
