"""Issue 33, item 5: two shared resources of one type with equal params are two values.

``twin_a`` and ``twin_b`` read the same ``json_file`` with the same params;
only ``twin_a`` has a validator (``max_rows: 2``). Under ``--workers N`` their
store entries were once keyed by type and params alone, so one key held
both: a value ``twin_a`` refused was served by ``twin_a`` in every worker once
``twin_b`` took it, a pinned ``twin_a`` served ``twin_b``'s new data, and a
rollback of one rolled both back. Each step below is checked in every
process that answers (its own mapped value, by pid) and over ``/execute``,
in one process and with ``--workers 2``, with the same expectations.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from ..pod import WAIT, Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

_META = {"common_input": [], "common_output": [], "item_input": [], "item_output": ["id", "score"]}
_ROWS = re.compile(r"list of (\d+) rows")
_ANSWERS = 12
"""New connections asked per check: the kernel hands each to whichever worker accepts."""


def _twins(feed: Path) -> dict[str, Any]:
    def twin(**extra: Any) -> dict[str, Any]:
        return {
            "type": "json_file",
            "interval": -1,
            "keep_previous": True,
            "params": {"path": str(feed)},
            **extra,
        }

    def recall(name: str) -> dict[str, Any]:
        return {"type_name": "recall_resource", "resource_name": name, "$metadata": _META}

    return {
        "_PINEAPPLE_VERSION": 1,
        "resource_config": {"twin_a": twin(validate={"max_rows": 2}), "twin_b": twin()},
        "pipeline_config": {
            "operators": {"recall_a": recall("twin_a"), "recall_b": recall("twin_b")}
        },
        "pipeline_group": {"main": {"pipeline": ["recall_a"]}, "b": {"pipeline": ["recall_b"]}},
        "flow_contract": {**_META, "item_input": []},
    }


def _write(feed: Path, rows: int) -> None:
    feed.write_bytes(orjson.dumps([{"id": i, "score": 1.0} for i in range(1, rows + 1)]))


def _mapped(server: Server, name: str, pids: set[int]) -> dict[int, int]:
    """``pid -> rows`` of ``name`` that each answering process serves (its own value)."""
    seen: dict[int, int] = {}
    end = time.monotonic() + WAIT
    while not pids <= set(seen):  # bounded by the deadline
        assert time.monotonic() < end, f"processes {pids - set(seen)} never answered"
        body = httpx.get(f"{server.url}/resources/{name}", timeout=WAIT).json()
        status = body["status"]
        own = status.get("worker") or status  # a worker's own mapping; one process's value
        found = _ROWS.search(own["summary"])
        assert found, body
        seen[int(body["worker"])] = int(found.group(1))
    return seen


def _everywhere(server: Server, name: str, rows: int, pids: set[int]) -> None:
    """Wait until every process serves ``rows`` rows of ``name`` (a worker maps within a poll)."""
    end = time.monotonic() + WAIT
    while set((got := _mapped(server, name, pids)).values()) != {rows}:
        assert time.monotonic() < end, f"{name}: served {got}, never {rows} rows everywhere"
        time.sleep(0.05)  # polling what other processes serve, with a deadline


def _executed(server: Server, group: str) -> set[int]:
    """How many items ``/execute/<group>`` answers, over ``_ANSWERS`` new connections."""
    counts = set()
    for _ in range(_ANSWERS):
        answer = httpx.post(f"{server.url}/execute/{group}", content=b'{"common":{},"items":[]}')
        assert answer.status_code == 200, answer.text
        counts.add(len(answer.json()["items"]))
    return counts


def _pids(server: Server) -> set[int]:
    return {p.pid for p in server.workers()} if server.supervised else {server.proc.pid}


def test_twins_are_refused_pinned_and_rolled_back_each_on_its_own(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    _write(feed, 1)
    server = serve(_twins(feed))
    pids = _pids(server)
    assert len(pids) == (2 if server.supervised else 1)

    # A value twin_a refuses (3 rows > max_rows 2) is served by twin_b only.
    _write(feed, 3)
    refused = server.admin("refresh", "twin_a")
    assert refused.status_code == 422, refused.text
    assert server.admin("refresh", "twin_b").status_code == 200
    _everywhere(server, "twin_b", 3, pids)
    assert _mapped(server, "twin_a", pids) == dict.fromkeys(pids, 1)
    assert _executed(server, "main") == {1} and _executed(server, "b") == {3}

    # A pinned twin_a keeps its value while twin_b takes a new one.
    _write(feed, 2)
    assert server.admin("pin", "twin_a").status_code == 200
    assert server.admin("refresh", "twin_b").status_code == 200
    assert server.admin("refresh", "twin_a").status_code == 409
    _everywhere(server, "twin_b", 2, pids)
    assert _mapped(server, "twin_a", pids) == dict.fromkeys(pids, 1)
    assert _executed(server, "main") == {1} and _executed(server, "b") == {2}

    # Unpinned, twin_a takes it; its rollback brings back its own previous value only.
    assert server.admin("unpin", "twin_a").status_code == 200
    assert server.admin("refresh", "twin_a").status_code == 200
    _everywhere(server, "twin_a", 2, pids)
    assert server.admin("rollback", "twin_a").status_code == 200
    _everywhere(server, "twin_a", 1, pids)
    assert _mapped(server, "twin_b", pids) == dict.fromkeys(pids, 2)
    assert _executed(server, "main") == {1} and _executed(server, "b") == {2}
