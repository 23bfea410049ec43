"""Target 4: a full ``feed_data`` load against a bare pymysql ``SSCursor`` read of the same rows."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pymysql.cursors

from resources import FeedDataFetcher, FeedTable

from ._mariadb import INDEX_COLUMNS, connect, feed_params, feed_table, unreachable
from ._measure import Result, median

__all__ = ["refresh_cost"]

ROWS = 200_000
NAME = f"feed_data load of {ROWS:,} rows (3 indices) / bare SSCursor read"


def _timed(fn: Callable[[], object]) -> float:
    gc.collect()  # each side starts from the same heap, not the other side's garbage
    started = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - started
    del result
    return elapsed


def refresh_cost(rounds: int = 5) -> list[Result]:
    """Median of interleaved rounds; both sides read the whole table over one kept connection."""
    reason = unreachable()
    if reason:
        return [Result(4, NAME, None, 1.5, reason)]
    with feed_table(ROWS) as table:
        fetcher = FeedDataFetcher(feed_params(table))
        conn = connect()
        sql = f"SELECT * FROM `{table}`"

        def bare() -> list[tuple[object, ...]]:
            with conn.cursor(pymysql.cursors.SSCursor) as cur:
                cur.execute(sql)
                rows = list(cur.fetchall_unbuffered())
            if len(rows) != ROWS:
                raise AssertionError(f"bare read got {len(rows)} rows")
            return rows

        def load() -> object:
            value = fetcher()
            if not isinstance(value, FeedTable) or len(value) != ROWS:
                raise AssertionError("feed_data did not load the whole table")
            return value

        try:
            bare(), load()  # warm-up: connections open, server cache hot
            samples: dict[str, list[float]] = {"bare": [], "load": []}
            for r in range(rounds):
                order = ("bare", "load") if r % 2 == 0 else ("load", "bare")
                for side in order:
                    samples[side].append(_timed(bare if side == "bare" else load))
        finally:
            fetcher.close()
            conn.close()
    t_bare, t_load = median(samples["bare"]), median(samples["load"])
    return [
        Result(
            4,
            NAME,
            t_load / t_bare,
            1.5,
            f"{t_load:.2f} s vs {t_bare:.2f} s (indices: {', '.join(INDEX_COLUMNS)}; "
            f"DECIMAL score to float)",
        )
    ]
