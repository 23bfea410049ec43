"""Shared tables (issue 14): reader speed of a mapped table, index cost, PSS with workers.

Rows: ``PINEAPPLE_BENCH_SHARED_ROWS`` (default 1,000,000, the issue's figure:
about 80 s on a busy 2-core machine). The PSS row sums ``/proc/PID/smaps_rollup``
over every process of each server and says where it goes (anon: what a
process builds for itself; shmem: the mapped snapshots, one copy split
between the processes that map them; file: the interpreter's own files).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from resources import FeedTable
from resources._feed_index import build_index
from resources._mapped_table import read_indices
from resources.lowlevel import build_feed_table, open_mapped_table, write_feed_snapshot

from ._measure import Result, interleaved
from ._procs import free_port, post, serve_pineapple
from ._proctree import Memory, memory, processes

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


def _serve_pss(config: Path, workers: int, shared: Path) -> list[Memory]:
    """PSS of every process of ``serve --workers N`` (the root first), after a few requests."""
    port = free_port()
    extra = ["--workers", str(workers), "--shared-dir", str(shared)]
    with serve_pineapple(config, port, extra, timeout=600) as proc:
        for _ in range(20):  # warm every worker a little (bounded)
            post(port, "/execute", b'{"common": {"cat": "c7"}, "items": []}')
        return [memory(p.pid) for p in processes(proc.pid)]


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
    n = int(os.environ.get("PINEAPPLE_BENCH_SHARED_ROWS", "1000000"))
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
        read_indices(stem.with_name("feed.index.arrow"))
        deserialize = time.perf_counter() - started
        started = time.perf_counter()
        for column in ("cat", "region", "tag"):
            build_index(mapped.column(column))
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
        one = sum(_serve_pss(config, 1, Path(d)), Memory())
        tree = _serve_pss(config, 4, Path(d))
        four = sum(tree, Memory())
        workers = sorted(tree[1:], key=lambda m: m.pss)
        worker = workers[len(workers) // 2] if workers else Memory()
        results.append(
            Result(
                14,
                "shared: PSS sum of --workers 4 / one process (same table)",
                four.pss / one.pss if one.pss else None,
                1.5,
                f"{four.mib()} over {len(tree)} processes vs {one.mib()}; supervisor "
                f"{tree[0].mib()}, median other {worker.mib()}; {n:,} rows; "
                f"load {os.getloadavg()[0]:.1f}",
            )
        )
    return results
