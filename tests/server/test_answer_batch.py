"""``server/_answer_batch.py``: answers held to the end of the loop's turn, and its bounds.

The clock is given (``now``), so each bound is checked at its edge; the
protocol's side (what a connection writes before anything else) is in
``tests/server/test_direct.py``.
"""

from __future__ import annotations

import asyncio

import pytest

from server._answer_batch import HOLD_SECONDS, AnswerBatch


class _Connection:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def write_held(self) -> None:
        self.log.append(self.name)


def test_held_connections_are_written_once_each_in_order_at_the_turns_end() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[str]()
        for name in ("a", "b", "c"):
            assert batch.hold(_Connection(name, log), loop, 1.0)
        during = list(log)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return during, log

    during, after = asyncio.run(scenario())
    assert during == [] and after == ["a", "b", "c"]


@pytest.mark.parametrize(("later", "written"), [(HOLD_SECONDS * 0.99, False), (HOLD_SECONDS, True)])
def test_a_hold_that_finds_the_batch_old_writes_it_at_once(later: float, written: bool) -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[str]()
        batch.hold(_Connection("a", log), loop, 0.0)
        batch.hold(_Connection("b", log), loop, later)
        return list(log)

    assert asyncio.run(scenario()) == (["a", "b"] if written else [])


@pytest.mark.parametrize(
    ("age", "latest_run", "written"),
    [
        (0.0, 0.0, False),
        (HOLD_SECONDS * 0.99, HOLD_SECONDS * 0.99, False),
        (HOLD_SECONDS, 0.0, True),  # the batch has waited long enough
        (0.0, HOLD_SECONDS, True),  # the coming run may be as slow as the latest
    ],
)
def test_a_run_starts_after_the_held_answers_are_written_when_they_would_wait_too_long(
    age: float, latest_run: float, written: bool
) -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        batch, log = AnswerBatch(), list[str]()
        batch.hold(_Connection("a", log), loop, 0.0)
        batch.latest_run = latest_run
        batch.before_run(age)
        return list(log)

    assert asyncio.run(scenario()) == (["a"] if written else [])


def test_a_connection_of_another_loop_is_not_held() -> None:
    other = asyncio.new_event_loop()
    try:

        async def scenario() -> tuple[bool, list[str]]:
            loop = asyncio.get_running_loop()
            batch, log = AnswerBatch(), list[str]()
            batch.hold(_Connection("a", log), loop, 1.0)
            refused = batch.hold(_Connection("b", log), other, 1.0)
            await asyncio.sleep(0)
            return refused, log

        refused, log = asyncio.run(scenario())
    finally:
        other.close()
    assert refused is False and log == ["a"]  # "b" is the caller's to write


def test_an_empty_batch_writes_nothing_and_holds_nothing() -> None:
    batch = AnswerBatch()
    batch.before_run(1.0)
    batch.write()
    assert not batch.holding
