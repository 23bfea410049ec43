"""Issue 21, item 7: a ``feed_data`` table's size is measured, not extrapolated from a sample.

The adversarial table of the issue: 2,000 rows whose odd rows hold 100 KB of
text. A sample of every (rows // 1000)-th row saw only the even rows and
reported about 300 KB for about 100 MB. Now every value is measured (by the
loader child per frame, or by the build), so the size is at least what the
values hold, as ``sys.getsizeof`` counts it value by value here, and a
memory budget below it refuses the table. (Through ``pineapple serve
--resource-memory-budget-bytes``: ``tests/server/test_feed_values_served.py``.)
"""

from __future__ import annotations

import sys
from typing import Any, TypeAlias

import pymysql
import pytest

import resources
from pineapple.resource import Manager, StartError
from pineapple.resource.lowlevel import MemoryBudget

pytestmark = pytest.mark.mysql

Conn: TypeAlias = "pymysql.connections.Connection[Any]"
ROWS, BIG = 2000, 100_000


def fill_adversarial(conn: Conn, table: str) -> None:
    """``ROWS`` rows; the odd ones carry ``BIG`` bytes of text, the even ones one byte."""
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS `{table}` (id INT PRIMARY KEY, score DOUBLE, pad LONGTEXT)"
        )
        cur.execute(
            f"INSERT INTO `{table}` SELECT seq, seq / 10, "
            f"IF(seq % 2 = 1, REPEAT('x', {BIG}), 'y') FROM seq_0_to_{ROWS - 1}"
        )


@pytest.fixture
def adversarial(mysql_conn: Conn, mysql_table: str) -> str:
    fill_adversarial(mysql_conn, mysql_table)
    return mysql_table


def _held(table: resources.FeedTable) -> int:
    """What the columns hold, measured here the slow way: each column and each distinct
    value object once (``None`` aside)."""
    total = 0
    for name in table.columns:
        column = table.column(name)
        distinct = {id(v): v for v in column if v is not None}
        total += sys.getsizeof(column) + sum(map(sys.getsizeof, distinct.values()))
    return total


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loader", ["process", "thread"])
def test_the_size_counts_every_row(mysql_dsn: str, adversarial: str, loader: str) -> None:
    fetcher = resources.FeedDataFetcher(
        {"mysql_dsn": mysql_dsn, "table": adversarial, "loader": loader}
    )
    try:
        table = fetcher()
    finally:
        fetcher.close()
    assert isinstance(table, resources.FeedTable)
    size = resources.lowlevel.FEED_DATA_SCHEMA.printer.size_of(table)  # type: ignore[union-attr]
    assert size is not None
    held = _held(table)
    assert held > (ROWS // 2) * BIG  # the odd rows' text is there
    # Never under what the values hold; over it only by objects the interpreter shares
    # (the ids 1..256, the one-character strings), which the size counts once per row.
    assert held <= size <= held * 1.01, (size, held)


@pytest.mark.timeout(120)
def test_a_budget_below_the_measured_size_refuses_the_table(
    mysql_dsn: str, adversarial: str
) -> None:
    rm = Manager(budget=MemoryBudget(50_000_000))  # half of what the odd rows hold
    rm.load_from_root_config(
        {
            "resource_config": {
                "feed": {
                    "type": "feed_data",
                    "params": {"mysql_dsn": mysql_dsn, "table": adversarial},
                }
            }
        }
    )
    with pytest.raises(StartError) as info:
        rm.start()
    assert "memory_budget" in str(info.value) and "50000000 bytes" in str(info.value)
    rm.stop()
