"""The loader child process: same rows as columns, errors named, the child always reaped."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from typing import Any, TypeAlias

import pymysql
import pytest

import resources
from resources import SourceError
from resources._feed_worker import FRAME_ROWS, read_in_child

pytestmark = pytest.mark.mysql

Conn: TypeAlias = "pymysql.connections.Connection[Any]"


def _kwargs(mysql_params: dict[str, Any]) -> dict[str, Any]:
    return {**mysql_params, "connect_timeout": 2, "read_timeout": 10}


def _no_children() -> bool:
    return not [p for p in multiprocessing.active_children() if p.name == "pineapple-feed-loader"]


@pytest.fixture
def rows_table(mysql_conn: Conn, mysql_table: str) -> str:
    rows = 2 * FRAME_ROWS + 7  # three frames, the last one short
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{mysql_table}` (id BIGINT PRIMARY KEY, score DECIMAL(6,2))")
        cur.executemany(
            f"INSERT INTO `{mysql_table}` VALUES (%s, %s)",
            [(i, None if i % 5 == 0 else f"{i % 100}.25") for i in range(rows)],
        )
    return mysql_table


def test_streams_every_row_as_column_frames_of_json_values(
    mysql_params: dict[str, Any], rows_table: str
) -> None:
    seen: list[int] = []

    def sink(names: list[str], chunks: Iterator[list[list[Any]]]) -> list[list[Any]]:
        assert names == ["id", "score"]
        columns: list[list[Any]] = [[], []]
        for chunk in chunks:
            seen.append(len(chunk[0]))
            for column, values in zip(columns, chunk, strict=True):
                column.extend(values)
        return columns

    ids, scores = read_in_child(
        _kwargs(mysql_params),
        f"SELECT * FROM `{rows_table}` ORDER BY id",
        sink,
        where="here",
        timeout=10,
    )
    assert seen == [FRAME_ROWS, FRAME_ROWS, 7]
    assert ids == list(range(2 * FRAME_ROWS + 7))
    assert scores[:6] == [None, 1.25, 2.25, 3.25, 4.25, None]  # DECIMAL -> float in the child
    assert _no_children()


def test_a_driver_error_is_a_source_error_naming_the_source(
    mysql_params: dict[str, Any],
) -> None:
    with pytest.raises(SourceError) as info:
        read_in_child(
            _kwargs(mysql_params),
            "SELECT * FROM no_such_table_here",
            lambda n, c: list(c),
            where="mysql somewhere",
            timeout=10,
        )
    assert str(info.value).startswith("mysql somewhere: ProgrammingError: (1146")
    assert _no_children()


def test_a_silent_child_is_killed_after_the_timeout(mysql_params: dict[str, Any]) -> None:
    with pytest.raises(SourceError, match=r"^w: loader process sent nothing for 0.3s$"):
        read_in_child(
            _kwargs(mysql_params),
            "SELECT SLEEP(5)",
            lambda n, c: list(c),
            where="w",
            timeout=0.3,
        )
    assert _no_children()


def test_a_child_that_dies_mid_stream_fails_the_load(
    mysql_params: dict[str, Any], rows_table: str
) -> None:
    def sink(names: list[str], chunks: Iterator[list[list[Any]]]) -> int:
        next(chunks)
        (child,) = [p for p in multiprocessing.active_children() if p.name.startswith("pine")]
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        return sum(1 for _ in chunks)

    with pytest.raises(
        SourceError,
        match=r"^w: loader process was killed by SIGKILL before the end, without an error$",
    ):
        read_in_child(
            _kwargs(mysql_params), f"SELECT * FROM `{rows_table}`", sink, where="w", timeout=10
        )
    assert _no_children()


def test_a_consumer_that_gives_up_early_still_reaps_the_child(
    mysql_params: dict[str, Any], rows_table: str
) -> None:
    def sink(names: list[str], chunks: Iterator[list[list[Any]]]) -> None:
        raise resources.FeedQueryError("no thanks")

    with pytest.raises(resources.FeedQueryError):
        read_in_child(
            _kwargs(mysql_params), f"SELECT * FROM `{rows_table}`", sink, where="w", timeout=10
        )
    assert _no_children()


def test_the_child_lowers_its_own_priority(mysql_params: dict[str, Any]) -> None:
    def sink(names: list[str], chunks: Iterator[list[list[Any]]]) -> int:
        (child,) = [p for p in multiprocessing.active_children() if p.name.startswith("pine")]
        assert child.pid is not None
        niceness = os.getpriority(os.PRIO_PROCESS, child.pid)
        list(chunks)
        return niceness

    mine = os.getpriority(os.PRIO_PROCESS, 0)
    # About 10 MB of rows: more than the pipe holds, so the child is still writing (alive)
    # when the sink looks for it. A one-row query could end before the sink starts.
    sql = "SELECT REPEAT('x', 1000) AS pad FROM seq_1_to_10000"
    niceness = read_in_child(_kwargs(mysql_params), sql, sink, where="w", timeout=10, nice=7)
    assert niceness == min(19, mine + 7)
