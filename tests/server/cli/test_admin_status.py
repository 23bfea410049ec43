"""``pineapple admin`` for people: ``status`` as a table, ``reload``, the resource actions
in one line each, and ``-o json`` for scripts, against a real server in one process and
with ``--workers 2`` (the ``serve`` fixture's two params)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..pod import Server, admin_cli, pipeline_config, wait_until

pytestmark = pytest.mark.e2e


def _config(tmp_path: Path) -> dict[str, Any]:
    feed = tmp_path / "feed.json"
    feed.write_text('[{"id": 1, "score": 1.0}]')
    resource = {"type": "json_file", "interval": 600, "params": {"path": str(feed)}}
    return pipeline_config(resource, {"type_name": "recall_resource", "resource_name": "feed"})


def _rows(table: str) -> list[list[str]]:
    """The table's lines split on its column gaps (three spaces or more)."""
    return [re.split(r"\s{3,}", line) for line in table.splitlines() if line]


def _row(table: str, first: str) -> dict[str, str]:
    """The row of the section whose header starts with ``first``, keyed by the header."""
    rows = _rows(table)
    at = next(i for i, row in enumerate(rows) if row[0] == first)
    return dict(zip(rows[at], rows[at + 1], strict=False))


def test_status_is_a_table_and_json_for_scripts(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    server = serve(config)
    want = "1 process" if not server.supervised else "2/2 serving, 0 restarts"

    def table() -> str:
        done = admin_cli(server, "status")
        assert done.returncode == 0, done.stderr
        return done.stdout

    wait_until(f"WORKERS {want}", lambda: _row(table(), "CONFIG")["WORKERS"] == want)
    shown = table()
    head = _row(shown, "CONFIG")
    assert head["CONFIG"] == "pineapple.json"
    assert re.fullmatch(r"[0-9a-f]{12}", head["REVISION"]), head
    assert head["GENERATION"] == "1"
    # One process records its start as a reload; a pod's supervisor does not.
    assert re.fullmatch(r"none since start|ok \(start, \d+s ago\)", head["LAST RELOAD"]), head
    feed = _row(shown, "NAME")
    assert feed["NAME"] == "feed" and feed["TYPE"] == "json_file"
    conditions = (feed["READY"], feed["FRESH"], feed["VALID"], feed["PINNED"])
    assert conditions == ("True", "True", "True", "False")
    assert (feed["VERSION"], feed["GEN"]) == ("1", "1")
    assert re.fullmatch(r"\d+s|\d+m\d*s?", feed["AGE"]), feed
    assert len(shown.splitlines()) == 5, shown  # a head, a row, a gap, a head, a row

    scripted = admin_cli(server, "status", "-o", "json")
    assert scripted.returncode == 0, scripted.stderr
    doc = json.loads(scripted.stdout)
    assert doc["addr"] == server.addr
    assert doc["resources"]["resources"][0]["name"] == "feed"
    assert doc["config"]["config"]["revision"] == head["REVISION"]


def test_reload_and_the_actions_answer_in_one_line_each(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    server = serve(config)

    unchanged = admin_cli(server, "reload")
    assert unchanged.returncode == 0, unchanged.stderr
    assert re.fullmatch(r"config: unchanged \(snapshot \d+, [0-9a-f]{12}\)\n", unchanged.stdout)

    pinned = admin_cli(server, "pin", "feed")
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout == (
        "feed: pinned (version 1; Ready=True Fresh=True Valid=True Pinned=True)\n"
    )
    row = _row(admin_cli(server, "status").stdout, "NAME")
    assert row["PINNED"] == "True"
    assert row["MESSAGE"].startswith("Pinned=True Pinned: pinned by an admin at "), row

    refused = admin_cli(server, "refresh", "feed")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("feed: refused (HTTP 409): ")
    assert "'feed' is pinned" in refused.stderr

    scripted = admin_cli(server, "unpin", "feed", "-o", "json")
    assert scripted.returncode == 0, scripted.stderr
    assert json.loads(scripted.stdout)["result"] == "unpinned"

    server.config.write_text("{not json")
    bad = admin_cli(server, "reload")
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("config: error at step "), bad.stderr
    assert "the served config stays" in bad.stderr
    head = _row(admin_cli(server, "status").stdout, "CONFIG")
    assert head["LAST RELOAD"].startswith("error (admin, "), head
    assert head["GENERATION"] == "1"

    server.config.write_text(json.dumps(config) + "\n")  # new bytes: a new generation
    applied = admin_cli(server, "reload", "-o", "json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["result"] == "ok"
    wait_until(
        "generation 2 shown",
        lambda: _row(admin_cli(server, "status").stdout, "CONFIG")["GENERATION"] == "2",
    )
