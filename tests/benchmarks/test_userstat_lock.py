"""``benchmarks._mariadb.userstat_on``: one block at a time, whichever connection or process.

``userstat`` is a global MariaDB setting that each block turns on and restores
after; two blocks at once (tests on two xdist workers) restored it under each
other, and a table's reads went uncounted. Each block now holds a named lock.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from benchmarks._mariadb import USERSTAT_LOCK, userstat_on

pytestmark = pytest.mark.mysql


def _userstat(conn: Any) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT @@global.userstat")
        row = cur.fetchone()
    return int(row[0])


def test_a_second_block_waits_for_the_first(mysql_params: dict[str, Any]) -> None:
    first = pymysql.connect(autocommit=True, **mysql_params)
    second = pymysql.connect(autocommit=True, **mysql_params)
    try:
        with userstat_on(first):
            waited = userstat_on(second, wait_seconds=0.2)
            with pytest.raises(TimeoutError, match=USERSTAT_LOCK), waited:
                pass  # not reached: the first block holds the lock
            assert _userstat(second) == 1  # the failed wait changed nothing
        with userstat_on(second, wait_seconds=30):  # free once the first block ended
            assert _userstat(first) == 1
    finally:
        first.close()
        second.close()
