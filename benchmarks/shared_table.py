"""Shared tables (issue 14): reader speed of a mapped table, index cost, PSS with workers.

Rows: ``PINEAPPLE_BENCH_SHARED_ROWS`` (default 200,000; the issue's figure is
1,000,000, which takes minutes to build on a busy 2-core machine).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from resources import FeedTable, build_feed_table, open_mapped_table, write_feed_snapshot
from resources._feed_table import _build_index
from resources._mapped_table import _read_indices

from ._measure import Result, interleaved
from ._procs import free_port, post, running

__all__ = ["shared_table"]

NAMES = ["id", "cat", "region", "tag", "score", "title"]
MATCH = {"cat": "c7", "region": ["r1", "r2"]}
FIELDS = [("id", "id"), ("score", "score"), ("title", "title")]


def _rows(n: int) -> list[tuple[Any, ...]]:
    rnd = random.Random(14)
    return [
        (
            i,
            f"c{rnd.randrange(20)}",
            f"r{rnd.randrange(5)}",
            rnd.randrange(100),
            rnd.random(),
            f"item {i}",
        )
        for i in range(n)
    ]


def _recall(table: FeedTable) -> None:
    rows = table.ids_matching(MATCH)
    table.project(table.order(rows, "score", True, 0, 50), FIELDS)


def _pss_tree(pid: int) -> int:
    total = 0
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return total


def _serve_pss(config: Path, workers: int, shared: Path) -> int:
    port = free_port()
    exe = str(Path(sys.executable).parent / "pineapple")
    cmd = [exe, "serve", str(config), "--addr", f"127.0.0.1:{port}", "--no-watch"]
    cmd += ["--log-level", "warning", "--workers", str(workers), "--shared-dir", str(shared)]
    with running(cmd, port, "pineapple serve", timeout=600):
        for _ in range(20):  # warm every worker a little (bounded)
            post(port, "/execute", b'{"common": {"cat": "c7"}, "items": []}')
        tail = cmd[1:]
        parent = [
            p
            for p in psutil.process_iter(["cmdline"])
            if (p.info["cmdline"] or [])[-len(tail) :] == tail
        ]
        return _pss_tree(parent[0].pid) if parent else 0


def _config(params: dict[str, Any]) -> dict[str, Any]:
    meta = {"common_input": ["cat"], "common_output": [], "item_input": [], "item_output": ["id"]}
    recall: dict[str, Any] = {"type_name": "recall_feed_data", "resource_name": "feed"}
    recall.update(match={"cat": "cat"}, order_by="score", descending=True)
    return {
        "resource_config": {"feed": {"type": "feed_data", "params": params}},
        "pipeline_config": {"operators": {"recall": {**recall, "$metadata": meta}}},
        "pipeline_group": {"main": {"pipeline": ["recall"]}},
        "flow_contract": dict(meta),
    }


def shared_table() -> list[Result]:
    """Mapped vs in-heap recall; deserialized vs rebuilt indices; PSS of 4 workers vs 1."""
    n = int(os.environ.get("PINEAPPLE_BENCH_SHARED_ROWS", "200000"))
    rows = _rows(n)
    heap = build_feed_table(NAMES, [rows], "id", ["cat", "region", "tag"])
    heap.prepare_order("score")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        stem = Path(d) / "feed"
        write_feed_snapshot(heap, stem)
        mapped = open_mapped_table(stem)
        t = interleaved(
            {"heap": lambda: _recall(heap), "mapped": lambda: _recall(mapped)}, number=20
        )
        results.append(
            Result(
                14,
                "shared: recall_feed_data on a mapped table / in-heap (2 columns, score, 50)",
                t["mapped"] / t["heap"],
                1.2,
                f"{t['mapped'] * 1e6:.0f} us vs {t['heap'] * 1e6:.0f} us, {n} rows",
            )
        )
        started = time.perf_counter()
        _read_indices(stem.with_name("feed.index.arrow"))
        deserialize = time.perf_counter() - started
        started = time.perf_counter()
        for column in ("cat", "region", "tag"):
            _build_index(mapped.column(column))
        rebuild = time.perf_counter() - started
        results.append(
            Result(
                14,
                "shared: indices deserialized from the snapshot / rebuilt per worker",
                deserialize / rebuild,
                1.0,
                f"{deserialize * 1e3:.0f} ms vs {rebuild * 1e3:.0f} ms per worker start",
            )
        )
        mapped.close()
        db = Path(d) / "feed.db"
        with sqlite3.connect(db) as conn:
            conn.execute(f"CREATE TABLE items ({', '.join(NAMES)})")
            conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)", rows)
        conn.close()
        config = Path(d) / "cfg.json"
        params = {
            "sqlite_path": str(db),
            "table": "items",
            "index_columns": ["cat", "region", "tag"],
        }
        params["order_columns"] = ["score"]
        config.write_text(json.dumps(_config(params)))
        one = _serve_pss(config, 1, Path(d))
        four = _serve_pss(config, 4, Path(d))
        results.append(
            Result(
                14,
                "shared: PSS sum of --workers 4 / one process (same table)",
                four / one if one else None,
                1.5,
                f"{four / 2**20:.0f} MiB vs {one / 2**20:.0f} MiB, {n} rows",
            )
        )
    return results
